// Launchers of the comparison and logical CUDA kernels
// (ops/cuda/compare.cu): bool results with numpy broadcasting through
// launch.h's BroadcastIndex. The OpKernels are in ops/cuda/compare.cc.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/launch.h"

namespace dflow::cuda {

enum class CompareFn { kLess, kLessEqual, kGreater, kGreaterEqual, kEqual, kNotEqual };
enum class LogicalFn { kAnd, kOr };

// z = fn(x, y) over float32; `same_shape` ignores `index`.
void LaunchCompare(cudaStream_t stream, CompareFn fn, const float* x, const float* y, bool* z,
                   int64_t n, bool same_shape, const BroadcastIndex& index);
void LaunchLogical(cudaStream_t stream, LogicalFn fn, const bool* x, const bool* y, bool* z,
                   int64_t n, bool same_shape, const BroadcastIndex& index);
void LaunchLogicalNot(cudaStream_t stream, const bool* x, bool* y, int64_t n);

}  // namespace dflow::cuda

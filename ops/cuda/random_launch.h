// Launcher of the random-number CUDA kernels (ops/cuda/random.cu): the CPU
// kernels' Philox streams (ops/cpu/philox.h), element i drawn from block
// base + i (truncated normal: base + attempt * n + i), so a GPU session
// draws exactly the numbers a CPU session with the same seeds draws.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dflow::cuda {

enum class RandomDistribution { kUniform, kNormal, kTruncatedNormal };
// The most blocks one truncated-normal element may use before it clamps to +-2.
inline constexpr uint64_t kTruncatedNormalTries = 64;

// n float32 (or float64 when `is_double`) values into `out`.
void LaunchRandom(cudaStream_t stream, RandomDistribution dist, bool is_double, uint64_t key,
                  uint64_t base, int64_t n, void* out);

}  // namespace dflow::cuda

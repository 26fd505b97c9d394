// CUDA kernels of the comparisons (float32 in, bool out; NaN compares false
// except for NotEqual, as the CPU) and of LogicalAnd/Or/Not. One kernel
// template serves both families: each output index is mapped to its x and
// y offsets through the broadcast strides unless the shapes are equal.
#include "ops/cuda/compare_launch.h"
#include "ops/cuda/grid.cuh"

namespace dflow::cuda {
namespace {

struct Compare {
  CompareFn fn;
  __device__ bool operator()(float x, float y) const {
    switch (fn) {
      case CompareFn::kLess: return x < y;
      case CompareFn::kLessEqual: return x <= y;
      case CompareFn::kGreater: return x > y;
      case CompareFn::kGreaterEqual: return x >= y;
      case CompareFn::kEqual: return x == y;
      case CompareFn::kNotEqual: return x != y;
    }
    return false;
  }
};

struct Logical {
  LogicalFn fn;
  __device__ bool operator()(bool x, bool y) const { return fn == LogicalFn::kAnd ? x && y : x || y; }
};

template <typename T, typename Fn>
__global__ void BroadcastKernel(Fn fn, const T* x, const T* y, bool* z, int64_t n, bool same_shape,
                                BroadcastIndex index) {
  DFLOW_GRID_STRIDE(i, n) {
    int64_t x_offset = i, y_offset = i;
    if (!same_shape) {
      int64_t rest = i;
      x_offset = y_offset = 0;
      for (int d = index.rank - 1; d >= 0; --d) {
        int64_t coord = rest % index.dims[d];
        rest /= index.dims[d];
        x_offset += coord * index.x_strides[d];
        y_offset += coord * index.y_strides[d];
      }
    }
    z[i] = fn(x[x_offset], y[y_offset]);
  }
}

__global__ void LogicalNotKernel(const bool* x, bool* y, int64_t n) {
  DFLOW_GRID_STRIDE(i, n) y[i] = !x[i];
}

}  // namespace

void LaunchCompare(cudaStream_t stream, CompareFn fn, const float* x, const float* y, bool* z,
                   int64_t n, bool same_shape, const BroadcastIndex& index) {
  if (n > 0)
    BroadcastKernel<<<Blocks(n), kThreads, 0, stream>>>(Compare{fn}, x, y, z, n, same_shape, index);
}

void LaunchLogical(cudaStream_t stream, LogicalFn fn, const bool* x, const bool* y, bool* z,
                   int64_t n, bool same_shape, const BroadcastIndex& index) {
  if (n > 0)
    BroadcastKernel<<<Blocks(n), kThreads, 0, stream>>>(Logical{fn}, x, y, z, n, same_shape, index);
}

void LaunchLogicalNot(cudaStream_t stream, const bool* x, bool* y, int64_t n) {
  if (n > 0) LogicalNotKernel<<<Blocks(n), kThreads, 0, stream>>>(x, y, n);
}

}  // namespace dflow::cuda

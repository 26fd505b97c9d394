// CUDA kernels of GatherV2 and OneHot: one thread per output element, the
// element moved as its bit pattern (4- or 8-byte words).
#include "ops/cuda/grid.cuh"
#include "ops/cuda/index_launch.h"

namespace dflow::cuda {
namespace {

template <typename U>
__global__ void GatherKernel(GatherShape s, const U* params, const int64_t* indices, U* out) {
  DFLOW_GRID_STRIDE(e, s.batch * s.outer * s.m * s.inner) {
    int64_t row = e / s.inner, k = e % s.inner;
    int64_t b = row / (s.outer * s.m), o = row / s.m % s.outer;
    out[e] = params[((b * s.outer + o) * s.n + indices[b * s.m + row % s.m]) * s.inner + k];
  }
}

template <typename U>
__global__ void OneHotKernel(const int64_t* indices, int64_t prefix, int64_t depth, int64_t suffix,
                             U on, U off, U* out) {
  DFLOW_GRID_STRIDE(e, prefix * depth * suffix) {
    int64_t s = e % suffix, i = e / suffix % depth, p = e / (suffix * depth);
    out[e] = indices[p * suffix + s] == i ? on : off;
  }
}

}  // namespace

void LaunchGather(cudaStream_t stream, int element_bytes, const GatherShape& s, const void* params,
                  const int64_t* indices, void* out) {
  int64_t n = s.batch * s.outer * s.m * s.inner;
  if (n <= 0) return;
  if (element_bytes == 4)
    GatherKernel<<<Blocks(n), kThreads, 0, stream>>>(s, static_cast<const uint32_t*>(params), indices,
                                                     static_cast<uint32_t*>(out));
  else
    GatherKernel<<<Blocks(n), kThreads, 0, stream>>>(s, static_cast<const uint64_t*>(params), indices,
                                                     static_cast<uint64_t*>(out));
}

void LaunchOneHot(cudaStream_t stream, int element_bytes, const int64_t* indices, int64_t prefix,
                  int64_t depth, int64_t suffix, uint64_t on, uint64_t off, void* out) {
  int64_t n = prefix * depth * suffix;
  if (n <= 0) return;
  if (element_bytes == 4)
    OneHotKernel<<<Blocks(n), kThreads, 0, stream>>>(indices, prefix, depth, suffix,
                                                     static_cast<uint32_t>(on), static_cast<uint32_t>(off),
                                                     static_cast<uint32_t*>(out));
  else
    OneHotKernel<<<Blocks(n), kThreads, 0, stream>>>(indices, prefix, depth, suffix, on, off,
                                                     static_cast<uint64_t*>(out));
}

}  // namespace dflow::cuda

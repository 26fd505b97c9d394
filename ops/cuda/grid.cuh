// Launch geometry shared by the CUDA kernels (ops/cuda/*.cu): 256-thread
// blocks, enough of them to cover n elements with a grid-stride loop, capped
// for huge n (the loop then takes several turns).
#pragma once

#include <cstdint>

namespace dflow::cuda {

inline constexpr int kThreads = 256;

inline unsigned Blocks(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 * 8 ? 65535 * 8 : blocks));
}

}  // namespace dflow::cuda

// for (i = this thread's first element; i < n; i += the whole grid)
#define DFLOW_GRID_STRIDE(i, n)                                                  \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n);      \
       i += int64_t{blockDim.x} * gridDim.x)

// Launchers of the indexing CUDA kernels (ops/cuda/index.cu): GatherV2's row
// copies and OneHot's fill, for 4- and 8-byte elements, with int64 indices
// already checked on the host. The OpKernels are in ops/cuda/index.cc.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dflow::cuda {

// params viewed as [batch, outer, n, inner], indices as [batch, m]:
// out[b, o, j, :] = params[b, o, indices[b, j], :].
struct GatherShape {
  int64_t batch, outer, n, inner, m;
};
void LaunchGather(cudaStream_t stream, int element_bytes, const GatherShape& s, const void* params,
                  const int64_t* indices, void* out);

// out [prefix, depth, suffix] = on where indices[p, s] equals the position
// along depth, else off (bit patterns of 4- or 8-byte elements).
void LaunchOneHot(cudaStream_t stream, int element_bytes, const int64_t* indices, int64_t prefix,
                  int64_t depth, int64_t suffix, uint64_t on, uint64_t off, void* out);

}  // namespace dflow::cuda

// CUDA kernels of Pad/PadV2 and Tile: one thread per output element, which
// decomposes its index into coordinates (innermost dim last) and maps each
// to the input's.
#include "ops/cuda/grid.cuh"
#include "ops/cuda/pad_tile_launch.h"

namespace dflow::cuda {
namespace {

template <typename U>
__global__ void PadKernel(PadTileIndex index, const U* in, U constant, U* out, int64_t n) {
  DFLOW_GRID_STRIDE(i, n) {
    int64_t rest = i, offset = 0;
    bool inside = true;
    for (int d = index.rank - 1; d >= 0; --d) {
      int64_t coord = rest % index.out_dims[d] - index.pad_before[d];
      rest /= index.out_dims[d];
      inside = inside && coord >= 0 && coord < index.in_dims[d];
      offset += coord * index.in_strides[d];
    }
    out[i] = inside ? in[offset] : constant;
  }
}

template <typename U>
__global__ void TileKernel(PadTileIndex index, const U* in, U* out, int64_t n) {
  DFLOW_GRID_STRIDE(i, n) {
    int64_t rest = i, offset = 0;
    for (int d = index.rank - 1; d >= 0; --d) {
      offset += rest % index.out_dims[d] % index.in_dims[d] * index.in_strides[d];
      rest /= index.out_dims[d];
    }
    out[i] = in[offset];
  }
}

}  // namespace

void LaunchPad(cudaStream_t stream, int element_bytes, const PadTileIndex& index, const void* in,
               uint64_t constant, void* out, int64_t n) {
  if (n <= 0) return;
  if (element_bytes == 4)
    PadKernel<<<Blocks(n), kThreads, 0, stream>>>(index, static_cast<const uint32_t*>(in),
                                                  static_cast<uint32_t>(constant),
                                                  static_cast<uint32_t*>(out), n);
  else
    PadKernel<<<Blocks(n), kThreads, 0, stream>>>(index, static_cast<const uint64_t*>(in), constant,
                                                  static_cast<uint64_t*>(out), n);
}

void LaunchTile(cudaStream_t stream, int element_bytes, const PadTileIndex& index, const void* in,
                void* out, int64_t n) {
  if (n <= 0) return;
  if (element_bytes == 4)
    TileKernel<<<Blocks(n), kThreads, 0, stream>>>(index, static_cast<const uint32_t*>(in),
                                                   static_cast<uint32_t*>(out), n);
  else
    TileKernel<<<Blocks(n), kThreads, 0, stream>>>(index, static_cast<const uint64_t*>(in),
                                                   static_cast<uint64_t*>(out), n);
}

}  // namespace dflow::cuda

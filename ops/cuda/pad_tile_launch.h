// Launchers of the Pad and Tile CUDA kernels (ops/cuda/pad_tile.cu): each
// output element finds its input coordinate per dim (Pad: minus the padding
// before, outside the input means the constant; Tile: modulo the input
// dim), for 4- and 8-byte elements up to rank 8 (launch.h's kMaxRank).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/launch.h"

namespace dflow::cuda {

struct PadTileIndex {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t in_dims[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  int64_t pad_before[kMaxRank] = {};  // Pad only
};

// `constant` holds the padding value's bit pattern (a 4-byte one in the low half).
void LaunchPad(cudaStream_t stream, int element_bytes, const PadTileIndex& index, const void* in,
               uint64_t constant, void* out, int64_t n);
void LaunchTile(cudaStream_t stream, int element_bytes, const PadTileIndex& index, const void* in,
                void* out, int64_t n);

}  // namespace dflow::cuda

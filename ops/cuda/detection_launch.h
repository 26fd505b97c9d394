// Launchers of the detection CUDA kernels (ops/cuda/detection.cu): BoxIou's
// pairwise matrix, greedy NMS's suppression bitmask and TopKV2's segmented
// sort. The OpKernels are in ops/cuda/detection.cc.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ops/cuda/launch.h"

namespace dflow::cuda {

// iou [n, m] = IoU(a[i], b[j]) of the boxes a [n, 4] and b [m, 4] as given
// (either corners first), with the CPU's formula (ops/box_geometry.h).
void LaunchBoxIou(cudaStream_t stream, const float* a, const float* b, float* iou, int64_t n,
                  int64_t m);

// Boxes per word of the NMS bitmask.
inline constexpr int64_t kNmsBlock = 64;

// Greedy NMS's suppression bits for `segments` independent problems. boxes:
// detection::Box records (ymin, xmin, ymax, xmax, area; normalised on the
// host), each problem's candidates in greedy order; problem s holds records
// [begin[s], begin[s + 1]) and, with m of them and W = ceil(m / 64) words a
// row, its mask rows at mask + mask_begin[s]: bit j of word w of row i is set
// when candidate 64 w + j comes after i and IoU(it, i) > iou_threshold. Only
// words w >= i / 64 of row i are written. max_candidates: the largest m.
void LaunchNmsMask(cudaStream_t stream, const float* boxes, const int64_t* begin,
                   const int64_t* mask_begin, int64_t segments, int64_t max_candidates,
                   float iou_threshold, uint64_t* mask);

// TopKV2 of x [rows, n] (float32, float64, int32 or int64) into values and
// indices [rows, k]: a stable descending radix sort of each row on a key that
// orders NaN above all and -0 with +0, so equal values keep the lower index
// first, as the CPU. rows * n must fit an int. `scratch` holds
// TopKScratchBytes(type, rows, n) bytes of device memory.
size_t TopKScratchBytes(CastType type, int64_t rows, int64_t n);
cudaError_t LaunchTopK(cudaStream_t stream, CastType type, const void* x, int64_t rows, int64_t n,
                       int64_t k, void* scratch, size_t scratch_bytes, void* values,
                       int32_t* indices);

}  // namespace dflow::cuda

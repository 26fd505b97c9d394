// CUDA kernels of the detection ops.
//
// BoxIou: one thread per pair. NMS: torchvision's design, the bitmask half:
// blocks of 64 threads, block (s, r, c) of problem s loads the 64 candidates
// of column block c into shared memory and each thread, one candidate i of
// row block r, sets bit j of its word c when candidate 64 c + j comes after
// i and overlaps it by IoU > threshold; the host then walks the candidates in
// order, keeping each one no kept box has marked (ops/cuda/detection.cc).
// TopKV2: cub's segmented radix sort of (key, position) pairs, one segment a
// row, then a gather of the first k of each row.
//
// The IoU is the CPU's (ops/box_geometry.h) operation for operation, with
// std::min/std::max's NaN behaviour and no contraction into fused
// multiply-adds (the __f*_rn intrinsics), so the same floats come out.
#include <cub/device/device_segmented_radix_sort.cuh>

#include "ops/cuda/detection_launch.h"
#include "ops/cuda/grid.cuh"

namespace dflow::cuda {
namespace {

// detection::Box's layout.
struct DeviceBox {
  float ymin, xmin, ymax, xmax, area;
};

// std::min and std::max: the first argument unless the other compares beyond it.
__device__ float Min(float a, float b) { return b < a ? b : a; }
__device__ float Max(float a, float b) { return a < b ? b : a; }

__device__ DeviceBox Normalize(const float* c) {
  DeviceBox b;
  b.ymin = Min(c[0], c[2]);
  b.ymax = Max(c[0], c[2]);
  b.xmin = Min(c[1], c[3]);
  b.xmax = Max(c[1], c[3]);
  b.area = __fmul_rn(__fsub_rn(b.ymax, b.ymin), __fsub_rn(b.xmax, b.xmin));
  return b;
}

__device__ float Iou(const DeviceBox& a, const DeviceBox& b) {
  if (a.area <= 0 || b.area <= 0) return 0.0f;
  float h = __fsub_rn(Min(a.ymax, b.ymax), Max(a.ymin, b.ymin));
  float w = __fsub_rn(Min(a.xmax, b.xmax), Max(a.xmin, b.xmin));
  float intersection = __fmul_rn(Max(h, 0.0f), Max(w, 0.0f));
  return __fdiv_rn(intersection, __fsub_rn(__fadd_rn(a.area, b.area), intersection));
}

__global__ void BoxIouKernel(const float* a, const float* b, float* iou, int64_t n, int64_t m) {
  DFLOW_GRID_STRIDE(e, n * m) iou[e] = Iou(Normalize(a + e / m * 4), Normalize(b + e % m * 4));
}

__global__ void NmsMaskKernel(const DeviceBox* boxes, const int64_t* begin,
                              const int64_t* mask_begin, float threshold, uint64_t* mask) {
  const int64_t first = begin[blockIdx.x], m = begin[blockIdx.x + 1] - first;
  const int64_t row_block = blockIdx.y, col_block = blockIdx.z;
  if (row_block > col_block || col_block * kNmsBlock >= m) return;  // the whole block
  __shared__ DeviceBox cols[kNmsBlock];
  const int64_t col_first = col_block * kNmsBlock;
  const int64_t col_count = m - col_first < kNmsBlock ? m - col_first : kNmsBlock;
  if (threadIdx.x < col_count) cols[threadIdx.x] = boxes[first + col_first + threadIdx.x];
  __syncthreads();
  const int64_t i = row_block * kNmsBlock + threadIdx.x;
  if (i >= m) return;
  const DeviceBox kept = boxes[first + i];
  uint64_t bits = 0;
  for (int64_t j = 0; j < col_count; ++j)
    if (col_first + j > i && Iou(cols[j], kept) > threshold) bits |= uint64_t{1} << j;
  const int64_t words = (m + kNmsBlock - 1) / kNmsBlock;
  mask[mask_begin[blockIdx.x] + i * words + col_block] = bits;
}

// A key whose ascending order is the CPU's "comes before" for TopKV2, read
// backwards: NaN highest, -0 equal to +0. 4-byte types use the low 32 bits.
__device__ uint64_t OrderKey(float v) {
  if (isnan(v)) return 0xffffffffu;
  if (v == 0.0f) v = 0.0f;
  uint32_t bits = __float_as_uint(v);
  return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}
__device__ uint64_t OrderKey(double v) {
  if (isnan(v)) return ~uint64_t{0};
  if (v == 0.0) v = 0.0;
  auto bits = static_cast<uint64_t>(__double_as_longlong(v));
  return (bits >> 63) ? ~bits : bits | (uint64_t{1} << 63);
}
__device__ uint64_t OrderKey(int32_t v) { return static_cast<uint32_t>(v) ^ 0x80000000u; }
__device__ uint64_t OrderKey(int64_t v) { return static_cast<uint64_t>(v) ^ (uint64_t{1} << 63); }

template <typename T>
__global__ void TopKKeysKernel(const T* x, int64_t count, int64_t n, uint64_t* keys,
                               int32_t* positions) {
  DFLOW_GRID_STRIDE(e, count) {
    keys[e] = OrderKey(x[e]);
    positions[e] = static_cast<int32_t>(e % n);
  }
}

__global__ void RowOffsetsKernel(int64_t rows, int64_t n, int* offsets) {
  DFLOW_GRID_STRIDE(r, rows + 1) offsets[r] = static_cast<int>(r * n);
}

template <typename U>
__global__ void TopKGatherKernel(const U* x, const int32_t* sorted, int64_t rows, int64_t n,
                                 int64_t k, U* values, int32_t* indices) {
  DFLOW_GRID_STRIDE(e, rows * k) {
    int64_t r = e / k;
    int32_t position = sorted[r * n + e % k];
    indices[e] = position;
    values[e] = x[r * n + position];
  }
}

// TopKV2's scratch: keys and positions in and out, row offsets, cub's own.
struct TopKScratch {
  uint64_t *keys_in, *keys_out;
  int32_t *positions_in, *positions_out;
  int* offsets;
  void* cub;
  size_t cub_bytes;
  size_t total;
};

size_t Aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Sorts the keys' low `bits` bits.
cudaError_t SortRows(void* temp, size_t& temp_bytes, const TopKScratch& s, int64_t rows, int64_t n,
                     int bits, cudaStream_t stream) {
  return cub::DeviceSegmentedRadixSort::SortPairsDescending(
      temp, temp_bytes, s.keys_in, s.keys_out, s.positions_in, s.positions_out,
      static_cast<int>(rows * n), static_cast<int>(rows), s.offsets, s.offsets + 1, 0, bits,
      stream);
}

int KeyBits(CastType type) { return type == CastType::kF32 || type == CastType::kI32 ? 32 : 64; }

// The layout from `base` (nullptr: sizes only) for keys of `bits` bits.
TopKScratch Layout(char* base, int64_t rows, int64_t n, int bits) {
  const auto count = static_cast<size_t>(rows * n);
  TopKScratch s{};
  size_t at = 0;
  auto take = [&](size_t bytes) {
    char* p = base ? base + at : nullptr;
    at += Aligned(bytes);
    return p;
  };
  s.keys_in = reinterpret_cast<uint64_t*>(take(count * 8));
  s.keys_out = reinterpret_cast<uint64_t*>(take(count * 8));
  s.positions_in = reinterpret_cast<int32_t*>(take(count * 4));
  s.positions_out = reinterpret_cast<int32_t*>(take(count * 4));
  s.offsets = reinterpret_cast<int*>(take((rows + 1) * sizeof(int)));
  SortRows(nullptr, s.cub_bytes, s, rows, n, bits, nullptr);
  s.cub = take(s.cub_bytes);
  s.total = at;
  return s;
}

template <typename T>
void TopKTyped(cudaStream_t stream, const TopKScratch& s, const T* x, int64_t rows, int64_t n,
               int64_t k, T* values, int32_t* indices, cudaError_t& status) {
  TopKKeysKernel<<<Blocks(rows * n), kThreads, 0, stream>>>(x, rows * n, n, s.keys_in,
                                                            s.positions_in);
  RowOffsetsKernel<<<Blocks(rows + 1), kThreads, 0, stream>>>(rows, n, s.offsets);
  size_t cub_bytes = s.cub_bytes;
  status = SortRows(s.cub, cub_bytes, s, rows, n, static_cast<int>(8 * sizeof(T)), stream);
  if (status != cudaSuccess) return;
  TopKGatherKernel<<<Blocks(rows * k), kThreads, 0, stream>>>(x, s.positions_out, rows, n, k,
                                                              values, indices);
}

}  // namespace

void LaunchBoxIou(cudaStream_t stream, const float* a, const float* b, float* iou, int64_t n,
                  int64_t m) {
  if (n * m <= 0) return;
  BoxIouKernel<<<Blocks(n * m), kThreads, 0, stream>>>(a, b, iou, n, m);
}

void LaunchNmsMask(cudaStream_t stream, const float* boxes, const int64_t* begin,
                   const int64_t* mask_begin, int64_t segments, int64_t max_candidates,
                   float iou_threshold, uint64_t* mask) {
  if (segments <= 0 || max_candidates <= 0) return;
  const auto blocks = static_cast<unsigned>((max_candidates + kNmsBlock - 1) / kNmsBlock);
  dim3 grid(static_cast<unsigned>(segments), blocks, blocks);
  NmsMaskKernel<<<grid, kNmsBlock, 0, stream>>>(reinterpret_cast<const DeviceBox*>(boxes), begin,
                                                mask_begin, iou_threshold, mask);
}

size_t TopKScratchBytes(CastType type, int64_t rows, int64_t n) {
  return Layout(nullptr, rows, n, KeyBits(type)).total;
}

cudaError_t LaunchTopK(cudaStream_t stream, CastType type, const void* x, int64_t rows, int64_t n,
                       int64_t k, void* scratch, size_t scratch_bytes, void* values,
                       int32_t* indices) {
  if (rows <= 0 || k <= 0) return cudaSuccess;
  TopKScratch s = Layout(static_cast<char*>(scratch), rows, n, KeyBits(type));
  if (s.total > scratch_bytes) return cudaErrorInvalidValue;
  cudaError_t status = cudaSuccess;
  switch (type) {
    case CastType::kF32:
      TopKTyped(stream, s, static_cast<const float*>(x), rows, n, k, static_cast<float*>(values),
                indices, status);
      break;
    case CastType::kF64:
      TopKTyped(stream, s, static_cast<const double*>(x), rows, n, k,
                static_cast<double*>(values), indices, status);
      break;
    case CastType::kI32:
      TopKTyped(stream, s, static_cast<const int32_t*>(x), rows, n, k,
                static_cast<int32_t*>(values), indices, status);
      break;
    case CastType::kI64:
      TopKTyped(stream, s, static_cast<const int64_t*>(x), rows, n, k,
                static_cast<int64_t*>(values), indices, status);
      break;
    default: return cudaErrorInvalidValue;  // TopK is registered for the four above only
  }
  return status;
}

}  // namespace dflow::cuda

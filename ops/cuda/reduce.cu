// CUDA kernels of the reductions (Sum/Mean/Max/Min over any axes) and of
// the row-wise softmax family (Softmax, SparseSoftmaxCrossEntropyWithLogits).
// One block per output value (or row): its threads stride over the reduced
// elements and combine their partial results in shared memory. When there
// are too few outputs to fill the GPU (a bias gradient: a few channels, each
// a sum over every pixel of the batch), each output's elements are cut into
// slices, a block per slice, and a second kernel combines the slices' results
// in slice order (so the result does not depend on scheduling).
#include <algorithm>
#include <cstdint>

#include "ops/cuda/grid.cuh"
#include "ops/cuda/launch.h"

namespace dflow::cuda {
namespace {

__device__ float Identity(ReduceFn fn) {
  switch (fn) {
    case ReduceFn::kSum: return 0.0f;
    case ReduceFn::kMax: return -__int_as_float(0x7f800000);  // -inf
    case ReduceFn::kMin: return __int_as_float(0x7f800000);
    case ReduceFn::kProd: return 1.0f;
  }
  return 0.0f;
}

// NaN-propagating like the CPU's Max/Min.
__device__ float Combine(ReduceFn fn, float acc, float x) {
  switch (fn) {
    case ReduceFn::kSum: return acc + x;
    case ReduceFn::kMax: return (x > acc || x != x) ? x : acc;
    case ReduceFn::kMin: return (x < acc || x != x) ? x : acc;
    case ReduceFn::kProd: return acc * x;
  }
  return acc;
}

// Tree-combines one value per thread of the block; thread 0 gets the result.
__device__ float BlockCombine(ReduceFn fn, float value, float* shared) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shared[threadIdx.x] = Combine(fn, shared[threadIdx.x], shared[threadIdx.x + half]);
    __syncthreads();
  }
  float result = shared[0];
  __syncthreads();  // the caller may reuse `shared`
  return result;
}

__device__ int64_t Offset(int64_t flat, int rank, const int64_t* dims, const int64_t* strides) {
  int64_t offset = 0;
  for (int d = rank - 1; d >= 0; --d) {
    offset += (flat % dims[d]) * strides[d];
    flat /= dims[d];
  }
  return offset;
}

__global__ void ReduceKernel(ReduceFn fn, const float* x, float* out, ReduceIndex index,
                             float scale) {
  __shared__ float shared[kThreads];
  for (int64_t o = blockIdx.x; o < index.output_count; o += gridDim.x) {
    const float* base = x + Offset(o, index.kept_rank, index.kept_dims, index.kept_strides);
    float acc = Identity(fn);
    for (int64_t r = threadIdx.x; r < index.reduced_count; r += blockDim.x)
      acc = Combine(fn, acc,
                    base[Offset(r, index.reduced_rank, index.reduced_dims, index.reduced_strides)]);
    float total = BlockCombine(fn, acc, shared);
    if (threadIdx.x == 0) out[o] = total * scale;
  }
}

// Block b reduces slice b % splits of output b / splits into
// partial[slice * output_count + output].
__global__ void ReduceSlicesKernel(ReduceFn fn, const float* x, float* partial, ReduceIndex index,
                                   int64_t splits) {
  __shared__ float shared[kThreads];
  const int64_t per_slice = (index.reduced_count + splits - 1) / splits;
  const int64_t o = blockIdx.x / splits, slice = blockIdx.x % splits;
  const float* base = x + Offset(o, index.kept_rank, index.kept_dims, index.kept_strides);
  const int64_t end = min(index.reduced_count, (slice + 1) * per_slice);
  float acc = Identity(fn);
  for (int64_t r = slice * per_slice + threadIdx.x; r < end; r += blockDim.x)
    acc = Combine(fn, acc, base[Offset(r, index.reduced_rank, index.reduced_dims, index.reduced_strides)]);
  float total = BlockCombine(fn, acc, shared);
  if (threadIdx.x == 0) partial[slice * index.output_count + o] = total;
}

// The reduction of a row-major [rows, cols] over its rows (a bias gradient,
// a sum over the batch). Block (tile, slice) covers `width` columns and the
// slice's rows; thread t reads column t % width of every lanes-th row, so a
// warp reads consecutive addresses; then each column's lanes are combined in
// lane order. With several slices, out is the partial sums (unscaled).
__global__ void ColumnReduceKernel(ReduceFn fn, const float* x, float* out, int64_t rows,
                                   int64_t cols, int width, int64_t rows_per_slice, float scale) {
  __shared__ float shared[kThreads];
  const int lanes = kThreads / width, t = threadIdx.x, column = t % width, lane = t / width;
  const int64_t col = blockIdx.x * int64_t{width} + column;
  const int64_t begin = blockIdx.y * rows_per_slice, end = min(rows, begin + rows_per_slice);
  float acc = Identity(fn);
  if (lane < lanes && col < cols)
    for (int64_t r = begin + lane; r < end; r += lanes) acc = Combine(fn, acc, x[r * cols + col]);
  shared[t] = acc;
  __syncthreads();
  if (lane != 0 || col >= cols) return;
  float total = Identity(fn);
  for (int l = 0; l < lanes; ++l) total = Combine(fn, total, shared[l * width + column]);
  out[blockIdx.y * cols + col] = gridDim.y > 1 ? total : total * scale;
}

__global__ void CombineSlicesKernel(ReduceFn fn, const float* partial, float* out, int64_t outputs,
                                    int64_t splits, float scale) {
  DFLOW_GRID_STRIDE(o, outputs) {
    float acc = Identity(fn);
    for (int64_t s = 0; s < splits; ++s) acc = Combine(fn, acc, partial[s * outputs + o]);
    out[o] = acc * scale;
  }
}

// Softmax (or its log) of one row per block: max, then sum of exp(x - max),
// then write.
template <bool kLog>
__global__ void SoftmaxKernel(const float* logits, float* out, int64_t rows, int64_t cols) {
  __shared__ float shared[kThreads];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* x = logits + row * cols;
    float m = Identity(ReduceFn::kMax);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = Combine(ReduceFn::kMax, m, x[c]);
    m = BlockCombine(ReduceFn::kMax, m, shared);
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(x[c] - m);
    sum = BlockCombine(ReduceFn::kSum, sum, shared);
    const float log_sum = logf(sum);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      out[row * cols + c] = kLog ? x[c] - m - log_sum : expf(x[c] - m) / sum;
  }
}

// loss = log(sum exp(x - max)) + max - x[label]; backprop = softmax - one_hot.
template <typename Label>
__global__ void SparseCrossEntropyKernel(const float* logits, const Label* labels, float* loss,
                                         float* backprop, int64_t rows, int64_t cols,
                                         unsigned long long* bad_label) {
  __shared__ float shared[kThreads];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* x = logits + row * cols;
    int64_t label = static_cast<int64_t>(labels[row]);
    bool valid = label >= 0 && label < cols;
    float m = Identity(ReduceFn::kMax);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = Combine(ReduceFn::kMax, m, x[c]);
    m = BlockCombine(ReduceFn::kMax, m, shared);
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(x[c] - m);
    sum = BlockCombine(ReduceFn::kSum, sum, shared);
    const float nan = __int_as_float(0x7fc00000);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      backprop[row * cols + c] = valid ? expf(x[c] - m) / sum - (c == label ? 1.0f : 0.0f) : nan;
    if (threadIdx.x == 0) {
      loss[row] = valid ? logf(sum) + m - x[label] : nan;
      // Keep the first bad label seen: swap it in only over the -1 marker.
      if (!valid) atomicCAS(bad_label, static_cast<unsigned long long>(-1LL),
                            static_cast<unsigned long long>(label));
    }
  }
}

// One block per output value (or row), capped; the kernels loop over the rest.
unsigned BlocksPerOutput(int64_t count) {
  return static_cast<unsigned>(count < 1 ? 1 : (count > 65535 ? 65535 : count));
}

// About 4 blocks per multiprocessor of the largest GPUs; fixed rules, so the
// summation order is the same on every GPU.
constexpr int64_t kTargetBlocks = 528;

// One kept dim of stride 1, the reduced dims tiling the rows above it.
bool ColumnLayout(const ReduceIndex& index) {
  if (index.kept_rank != 1 || index.kept_strides[0] != 1 || index.reduced_rank < 1) return false;
  int64_t stride = index.kept_dims[0];
  for (int d = index.reduced_rank - 1; d >= 0; --d) {
    if (index.reduced_strides[d] != stride) return false;
    stride *= index.reduced_dims[d];
  }
  return true;
}

int ColumnWidth(int64_t cols) { return static_cast<int>(std::min<int64_t>(cols, 32)); }

// Slices of at least 1024 rows.
int64_t ColumnSplits(const ReduceIndex& index) {
  const int64_t cols = index.kept_dims[0], rows = index.reduced_count;
  const int64_t tiles = (cols + ColumnWidth(cols) - 1) / ColumnWidth(cols);
  int64_t splits = std::clamp<int64_t>((kTargetBlocks + tiles - 1) / tiles, 1,
                                       std::max<int64_t>(rows / 1024, 1));
  const int64_t per_slice = (rows + splits - 1) / splits;
  return std::min<int64_t>((rows + per_slice - 1) / per_slice, 65535);
}

}  // namespace

int64_t ReduceSplits(const ReduceIndex& index) {
  if (index.output_count <= 0) return 1;
  if (ColumnLayout(index)) return ColumnSplits(index);
  // Slices of at least 4096 elements, only when the outputs are too few.
  constexpr int64_t kMinSlice = 4096;
  if (index.output_count >= kTargetBlocks / 2) return 1;
  int64_t splits = (kTargetBlocks + index.output_count - 1) / index.output_count;
  return std::max<int64_t>(1, std::min(splits, index.reduced_count / kMinSlice));
}

void LaunchReduce(cudaStream_t stream, ReduceFn fn, const float* x, float* out,
                  const ReduceIndex& index, float scale, float* partial) {
  if (index.output_count <= 0) return;
  const int64_t splits = ReduceSplits(index);
  if (ColumnLayout(index)) {
    const int64_t cols = index.kept_dims[0], rows = index.reduced_count;
    const int width = ColumnWidth(cols);
    const int64_t per_slice = (rows + splits - 1) / splits;
    dim3 grid(static_cast<unsigned>((cols + width - 1) / width), static_cast<unsigned>(splits));
    ColumnReduceKernel<<<grid, kThreads, 0, stream>>>(fn, x, splits > 1 ? partial : out, rows, cols,
                                                      width, per_slice, scale);
    if (splits > 1)
      CombineSlicesKernel<<<Blocks(cols), kThreads, 0, stream>>>(fn, partial, out, cols, splits, scale);
    return;
  }
  if (splits == 1) {
    ReduceKernel<<<BlocksPerOutput(index.output_count), kThreads, 0, stream>>>(fn, x, out, index, scale);
    return;
  }
  ReduceSlicesKernel<<<static_cast<unsigned>(index.output_count * splits), kThreads, 0, stream>>>(
      fn, x, partial, index, splits);
  CombineSlicesKernel<<<Blocks(index.output_count), kThreads, 0, stream>>>(fn, partial, out,
                                                                           index.output_count, splits, scale);
}

void LaunchSoftmax(cudaStream_t stream, const float* logits, float* out, int64_t rows, int64_t cols) {
  if (rows > 0 && cols > 0)
    SoftmaxKernel<false><<<BlocksPerOutput(rows), kThreads, 0, stream>>>(logits, out, rows, cols);
}

void LaunchLogSoftmax(cudaStream_t stream, const float* logits, float* out, int64_t rows,
                      int64_t cols) {
  if (rows > 0 && cols > 0)
    SoftmaxKernel<true><<<BlocksPerOutput(rows), kThreads, 0, stream>>>(logits, out, rows, cols);
}

void LaunchSparseCrossEntropy(cudaStream_t stream, const float* logits, const void* labels,
                              bool labels_are_int64, float* loss, float* backprop, int64_t rows,
                              int64_t cols, int64_t* bad_label) {
  if (rows <= 0) return;
  auto* bad = reinterpret_cast<unsigned long long*>(bad_label);
  if (labels_are_int64)
    SparseCrossEntropyKernel<<<BlocksPerOutput(rows), kThreads, 0, stream>>>(
        logits, static_cast<const int64_t*>(labels), loss, backprop, rows, cols, bad);
  else
    SparseCrossEntropyKernel<<<BlocksPerOutput(rows), kThreads, 0, stream>>>(
        logits, static_cast<const int32_t*>(labels), loss, backprop, rows, cols, bad);
}

}  // namespace dflow::cuda

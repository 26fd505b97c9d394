// CUDA kernels of the reductions (Sum/Mean/Max/Min over any axes) and of
// the row-wise softmax family (Softmax, SparseSoftmaxCrossEntropyWithLogits).
// One block per output value (or row): its threads stride over the reduced
// elements and combine their partial results in shared memory.
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

}  // namespace

void LaunchReduce(cudaStream_t stream, ReduceFn fn, const float* x, float* out,
                  const ReduceIndex& index, float scale) {
  if (index.output_count > 0)
    ReduceKernel<<<BlocksPerOutput(index.output_count), kThreads, 0, stream>>>(fn, x, out, index, scale);
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

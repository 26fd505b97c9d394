// The CUDA kernels' launchers: plain functions over device pointers, defined
// in ops/cuda/*.cu and called by the OpKernels in ops/cuda/*.cc. Each
// enqueues on `stream` and returns; the caller checks the launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dflow::cuda {

inline constexpr int kMaxRank = 8;

// Output dims and, per operand, the element stride along each output dim (0
// where that operand is broadcast).
struct BroadcastIndex {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t x_strides[kMaxRank] = {};
  int64_t y_strides[kMaxRank] = {};
  int64_t c_strides[kMaxRank] = {};  // Select's condition
};

enum class UnaryFn { kNeg, kAbs, kSquare, kSqrt, kRsqrt, kExp, kLog, kTanh, kSigmoid, kRelu,
                     kRelu6, kReciprocal, kSign, kLog1p, kSin, kCos, kFloor, kCeil, kRound, kElu,
                     kSoftplus };
enum class BinaryFn { kAdd, kSub, kMul, kDiv, kMaximum, kMinimum, kSquaredDifference, kPow,
                      kReluGrad, kFloorDiv, kFloorMod };

void LaunchUnary(cudaStream_t stream, UnaryFn fn, const float* x, float* y, int64_t n);
// Element types: the binary ops and AssignAdd take the first four, Cast all.
enum class CastType { kF32, kF64, kI32, kI64, kBool, kU8, kI8, kF16 };
// z = fn(x, y) over float32 (kF32), int32 or int64 elements; `same_shape`
// takes the contiguous path and ignores `index`. Integers follow the CPU's
// rules (wrapping arithmetic; Div, FloorDiv, FloorMod as C and Python); a
// zero integer divisor gives 0 and atomicMin's its offset into y into
// *zero_divisor, which the caller starts at ~0 (unused for floats).
void LaunchBinary(cudaStream_t stream, BinaryFn fn, CastType type, const void* x, const void* y,
                  void* z, int64_t n, bool same_shape, const BroadcastIndex& index,
                  unsigned long long* zero_divisor);
// y[i] = x[i] + bias[i % channels]
void LaunchBiasAdd(cudaStream_t stream, const float* x, const float* bias, float* y, int64_t n,
                   int64_t channels);
// acc[i] += x[i]
void LaunchAccumulate(cudaStream_t stream, const float* x, float* acc, int64_t n);
// Fills n elements of 1, 4 or 8 bytes with one bit pattern.
void LaunchFill8(cudaStream_t stream, uint8_t bits, void* out, int64_t n);
void LaunchFill32(cudaStream_t stream, uint32_t bits, void* out, int64_t n);
void LaunchFill64(cudaStream_t stream, uint64_t bits, void* out, int64_t n);
// Element-wise conversion between any two CastTypes, as the CPU's Cast;
// `truncate` (Cast's Truncate) rounds toward zero where it narrows to float
// or float16.
void LaunchCast(cudaStream_t stream, CastType from, const void* x, CastType to, void* y, int64_t n,
                bool truncate);
// var += delta (var -= delta when `subtract`), in place; integers wrap.
void LaunchAssignUpdate(cudaStream_t stream, CastType type, void* var, const void* delta,
                        int64_t n, bool subtract);
// out = x broadcast to the index's dims (x_strides), for 1-, 4- or 8-byte elements.
void LaunchBroadcastCopy(cudaStream_t stream, int element_bytes, const void* x, void* out,
                         int64_t n, const BroadcastIndex& index);
// out = condition ? t : e with condition (bool bytes), t (x_strides) and e
// (y_strides) broadcast; 1-, 4- or 8-byte elements.
void LaunchSelect(cudaStream_t stream, int element_bytes, const bool* condition, const void* t,
                  const void* e, void* out, int64_t n, const BroadcastIndex& index);

// Reductions: input dims split into kept (output) dims and reduced dims,
// each with its input strides; out[o] = fold over the reduced elements,
// times `scale` (1/count for Mean).
enum class ReduceFn { kSum, kMax, kMin, kProd };
struct ReduceIndex {
  int kept_rank = 0;
  int64_t kept_dims[kMaxRank] = {};
  int64_t kept_strides[kMaxRank] = {};
  int reduced_rank = 0;
  int64_t reduced_dims[kMaxRank] = {};
  int64_t reduced_strides[kMaxRank] = {};
  int64_t reduced_count = 1;
  int64_t output_count = 1;
};
// How many slices LaunchReduce cuts each output's elements into (1: none);
// with more than one, `partial` must hold splits * output_count floats.
int64_t ReduceSplits(const ReduceIndex& index);
void LaunchReduce(cudaStream_t stream, ReduceFn fn, const float* x, float* out,
                  const ReduceIndex& index, float scale, float* partial);

// Softmax over the last dim of [rows, cols].
void LaunchSoftmax(cudaStream_t stream, const float* logits, float* out, int64_t rows, int64_t cols);
// log(softmax): x - max - log(sum exp(x - max)) per row.
void LaunchLogSoftmax(cudaStream_t stream, const float* logits, float* out, int64_t rows,
                      int64_t cols);
// loss[r] = logsumexp(x[r]) - x[r, label[r]]; backprop = softmax(x) - one_hot.
// A label outside [0, cols) is written to *bad_label (first seen) and its
// row's outputs are NaN; *bad_label must start at -1.
void LaunchSparseCrossEntropy(cudaStream_t stream, const float* logits, const void* labels,
                              bool labels_are_int64, float* loss, float* backprop, int64_t rows,
                              int64_t cols, int64_t* bad_label);

// Optimizer steps; hyper-parameters are device scalars.
void LaunchApplyGradientDescent(cudaStream_t stream, float* var, const float* alpha,
                                const float* delta, int64_t n);
void LaunchApplyMomentum(cudaStream_t stream, float* var, float* accum, const float* lr,
                         const float* grad, const float* momentum, bool nesterov, int64_t n);
// hyper: beta1_power, beta2_power, lr, beta1, beta2, epsilon (six device scalars).
struct AdamHyper {
  const float* beta1_power;
  const float* beta2_power;
  const float* lr;
  const float* beta1;
  const float* beta2;
  const float* epsilon;
};
void LaunchApplyAdam(cudaStream_t stream, float* var, float* m, float* v, const float* grad,
                     const AdamHyper& hyper, bool nesterov, int64_t n);
// RMSProp's four device scalars.
struct RMSPropHyper {
  const float* lr;
  const float* rho;
  const float* momentum;
  const float* epsilon;
};
void LaunchApplyRMSProp(cudaStream_t stream, float* var, float* ms, float* mom, const float* grad,
                        const RMSPropHyper& hyper, int64_t n);

}  // namespace dflow::cuda

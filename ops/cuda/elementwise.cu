// CUDA kernels of the element-wise ops: unary math, broadcasting binary
// math, BiasAdd, accumulation (AddN), Fill and Cast. One kernel per family
// with the function picked by a uniform switch keeps nvcc's work small.
#include <cstdint>
#include <limits>
#include <type_traits>

#include <cuda_fp16.h>

#include "ops/cuda/grid.cuh"
#include "ops/cuda/launch.h"

namespace dflow::cuda {
namespace {

__device__ float ApplyUnary(UnaryFn fn, float x) {
  switch (fn) {
    case UnaryFn::kNeg: return -x;
    case UnaryFn::kAbs: return fabsf(x);
    case UnaryFn::kSquare: return x * x;
    case UnaryFn::kSqrt: return sqrtf(x);
    case UnaryFn::kRsqrt: return rsqrtf(x);
    case UnaryFn::kExp: return expf(x);
    case UnaryFn::kLog: return logf(x);
    case UnaryFn::kTanh: return tanhf(x);
    case UnaryFn::kSigmoid: return 1.0f / (1.0f + expf(-x));
    case UnaryFn::kRelu: return x > 0.0f ? x : (x != x ? x : 0.0f);
    case UnaryFn::kRelu6: return x < 0.0f ? 0.0f : (x > 6.0f ? 6.0f : x);  // NaN stays NaN
    case UnaryFn::kReciprocal: return 1.0f / x;
    case UnaryFn::kSign: return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x);  // NaN and 0 stay
    case UnaryFn::kLog1p: return log1pf(x);
    case UnaryFn::kSin: return sinf(x);
    case UnaryFn::kCos: return cosf(x);
    case UnaryFn::kFloor: return floorf(x);
    case UnaryFn::kCeil: return ceilf(x);
    case UnaryFn::kRound: return rintf(x);  // halves to even, as the CPU's rint
    case UnaryFn::kElu: return x > 0.0f ? x : expm1f(x);
    // log(1 + e^x) = max(x, 0) + log1p(e^-|x|), which never overflows
    case UnaryFn::kSoftplus: return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
  }
  return x;
}

// Same NaN rules as the CPU kernels: Maximum/Minimum propagate a NaN x.
// (`y_offset` and `zero_divisor` are for the integer version's division.)
__device__ float ApplyBinary(BinaryFn fn, float x, float y, int64_t, unsigned long long*) {
  switch (fn) {
    case BinaryFn::kAdd: return x + y;
    case BinaryFn::kSub: return x - y;
    case BinaryFn::kMul: return x * y;
    case BinaryFn::kDiv: return x / y;
    case BinaryFn::kMaximum: return (x != x || x > y) ? x : y;
    case BinaryFn::kMinimum: return (x != x || x < y) ? x : y;
    case BinaryFn::kSquaredDifference: return (x - y) * (x - y);
    case BinaryFn::kPow: return powf(x, y);
    case BinaryFn::kReluGrad: return y > 0.0f ? x : 0.0f;  // x: gradient, y: features
    case BinaryFn::kFloorDiv: return floorf(x / y);
    case BinaryFn::kFloorMod: {  // C's remainder moved to y's sign when they differ
      float r = fmodf(x, y);
      return (r != 0.0f && ((r < 0.0f) != (y < 0.0f))) ? r + y : r;
    }
  }
  return x;
}

// The CPU's integer rules: arithmetic wraps (done unsigned, where wrapping
// is defined); Div truncates, FloorDiv and FloorMod round toward -inf; y ==
// -1 is apart (INT_MIN / -1 traps). A zero divisor gives 0 and leaves the
// lowest such offset into y in *zero_divisor, for the host to report.
template <typename T>
__device__ T ApplyBinary(BinaryFn fn, T x, T y, int64_t y_offset, unsigned long long* zero_divisor) {
  using U = std::make_unsigned_t<T>;
  switch (fn) {
    case BinaryFn::kAdd: return static_cast<T>(U(x) + U(y));
    case BinaryFn::kSub: return static_cast<T>(U(x) - U(y));
    case BinaryFn::kMul: return static_cast<T>(U(x) * U(y));
    case BinaryFn::kMaximum: return x > y ? x : y;
    case BinaryFn::kMinimum: return x < y ? x : y;
    case BinaryFn::kSquaredDifference: {
      U d = U(x) - U(y);
      return static_cast<T>(d * d);
    }
    case BinaryFn::kDiv:
    case BinaryFn::kFloorDiv:
    case BinaryFn::kFloorMod: {
      if (y == 0) {
        atomicMin(zero_divisor, static_cast<unsigned long long>(y_offset));
        return 0;
      }
      if (y == -1) return fn == BinaryFn::kFloorMod ? T(0) : static_cast<T>(U(0) - U(x));
      T q = x / y, r = x % y;
      bool toward_minus_inf = r != 0 && ((r < 0) != (y < 0));
      if (fn == BinaryFn::kDiv) return q;
      if (fn == BinaryFn::kFloorDiv) return toward_minus_inf ? q - 1 : q;
      return toward_minus_inf ? r + y : r;
    }
    default: return 0;  // Pow and ReluGrad have no integer kernels
  }
}

__global__ void UnaryKernel(UnaryFn fn, const float* x, float* y, int64_t n) {
  DFLOW_GRID_STRIDE(i, n) y[i] = ApplyUnary(fn, x[i]);
}

template <typename T>
__global__ void BinarySameShapeKernel(BinaryFn fn, const T* x, const T* y, T* z, int64_t n,
                                      unsigned long long* zero_divisor) {
  DFLOW_GRID_STRIDE(i, n) z[i] = ApplyBinary(fn, x[i], y[i], i, zero_divisor);
}

// Each output index is decomposed into coordinates (innermost dim last) and
// mapped to x and y offsets through their broadcast strides.
template <typename T>
__global__ void BinaryBroadcastKernel(BinaryFn fn, const T* x, const T* y, T* z, int64_t n,
                                      BroadcastIndex index, unsigned long long* zero_divisor) {
  DFLOW_GRID_STRIDE(i, n) {
    int64_t rest = i, x_offset = 0, y_offset = 0;
    for (int d = index.rank - 1; d >= 0; --d) {
      int64_t coord = rest % index.dims[d];
      rest /= index.dims[d];
      x_offset += coord * index.x_strides[d];
      y_offset += coord * index.y_strides[d];
    }
    z[i] = ApplyBinary(fn, x[x_offset], y[y_offset], y_offset, zero_divisor);
  }
}

__global__ void BiasAddKernel(const float* x, const float* bias, float* y, int64_t n,
                              int64_t channels) {
  DFLOW_GRID_STRIDE(i, n) y[i] = x[i] + bias[i % channels];
}

__global__ void AccumulateKernel(const float* x, float* acc, int64_t n) {
  DFLOW_GRID_STRIDE(i, n) acc[i] += x[i];
}

template <typename T>
__global__ void FillKernel(T bits, T* out, int64_t n) {
  DFLOW_GRID_STRIDE(i, n) out[i] = bits;
}

// Like the CPU Cast: float16 converts through float; anything to bool is
// x != 0; floats to integers truncate, saturate at the integer's range, and
// NaN becomes 0; narrowing to float or float16 rounds to nearest even, or
// toward zero when `truncate`.
template <typename To, typename From>
__device__ To Convert(From x, bool truncate) {
  if constexpr (std::is_same_v<From, __half>) {
    return Convert<To>(__half2float(x), truncate);
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_same_v<To, __half>) {
    const float f = Convert<float>(x, truncate);
    return truncate ? __float2half_rz(f) : __float2half_rn(f);
  } else if constexpr (std::is_same_v<To, float> && std::is_same_v<From, double>) {
    return truncate ? __double2float_rz(x) : static_cast<float>(x);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (x != x) return To(0);
    if (x <= static_cast<From>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (x >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

template <typename From, typename To>
__global__ void CastKernel(const From* x, To* y, int64_t n, bool truncate) {
  DFLOW_GRID_STRIDE(i, n) y[i] = Convert<To>(x[i], truncate);
}

template <typename From>
void CastFrom(cudaStream_t stream, const From* x, CastType to, void* y, int64_t n, bool truncate) {
  using enum CastType;
  switch (to) {
    case kF32: CastKernel<<<Blocks(n), kThreads, 0, stream>>>(x, static_cast<float*>(y), n, truncate); break;
    case kF64: CastKernel<<<Blocks(n), kThreads, 0, stream>>>(x, static_cast<double*>(y), n, truncate); break;
    case kI32: CastKernel<<<Blocks(n), kThreads, 0, stream>>>(x, static_cast<int32_t*>(y), n, truncate); break;
    case kI64: CastKernel<<<Blocks(n), kThreads, 0, stream>>>(x, static_cast<int64_t*>(y), n, truncate); break;
    case kBool: CastKernel<<<Blocks(n), kThreads, 0, stream>>>(x, static_cast<bool*>(y), n, truncate); break;
    case kU8: CastKernel<<<Blocks(n), kThreads, 0, stream>>>(x, static_cast<uint8_t*>(y), n, truncate); break;
    case kI8: CastKernel<<<Blocks(n), kThreads, 0, stream>>>(x, static_cast<int8_t*>(y), n, truncate); break;
    case kF16: CastKernel<<<Blocks(n), kThreads, 0, stream>>>(x, static_cast<__half*>(y), n, truncate); break;
  }
}

// Integers go through unsigned arithmetic, where wrapping is defined.
template <typename T>
using Arith = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>,
                                          std::type_identity<T>>::type;

template <typename T>
__global__ void AssignUpdateKernel(T* var, const T* delta, int64_t n, bool subtract) {
  using Arith = Arith<T>;
  DFLOW_GRID_STRIDE(i, n) {
    Arith v = static_cast<Arith>(var[i]), d = static_cast<Arith>(delta[i]);
    var[i] = static_cast<T>(subtract ? v - d : v + d);
  }
}

template <typename T>
__global__ void BroadcastCopyKernel(const T* x, T* out, int64_t n, BroadcastIndex index) {
  DFLOW_GRID_STRIDE(i, n) {
    int64_t rest = i, x_offset = 0;
    for (int d = index.rank - 1; d >= 0; --d) {
      x_offset += (rest % index.dims[d]) * index.x_strides[d];
      rest /= index.dims[d];
    }
    out[i] = x[x_offset];
  }
}

template <typename T>
__global__ void SelectKernel(const bool* condition, const T* t, const T* e, T* out, int64_t n,
                             BroadcastIndex index) {
  DFLOW_GRID_STRIDE(i, n) {
    int64_t rest = i, t_offset = 0, e_offset = 0, c_offset = 0;
    for (int d = index.rank - 1; d >= 0; --d) {
      int64_t coord = rest % index.dims[d];
      rest /= index.dims[d];
      t_offset += coord * index.x_strides[d];
      e_offset += coord * index.y_strides[d];
      c_offset += coord * index.c_strides[d];
    }
    out[i] = condition[c_offset] ? t[t_offset] : e[e_offset];
  }
}

}  // namespace

void LaunchAssignUpdate(cudaStream_t stream, CastType type, void* var, const void* delta,
                        int64_t n, bool subtract) {
  if (n <= 0) return;
  using enum CastType;
  switch (type) {
    case kF32: AssignUpdateKernel<<<Blocks(n), kThreads, 0, stream>>>(static_cast<float*>(var), static_cast<const float*>(delta), n, subtract); break;
    case kF64: AssignUpdateKernel<<<Blocks(n), kThreads, 0, stream>>>(static_cast<double*>(var), static_cast<const double*>(delta), n, subtract); break;
    case kI32: AssignUpdateKernel<<<Blocks(n), kThreads, 0, stream>>>(static_cast<int32_t*>(var), static_cast<const int32_t*>(delta), n, subtract); break;
    case kI64: AssignUpdateKernel<<<Blocks(n), kThreads, 0, stream>>>(static_cast<int64_t*>(var), static_cast<const int64_t*>(delta), n, subtract); break;
    default: break;  // the kernel is registered for the four above only
  }
}

void LaunchBroadcastCopy(cudaStream_t stream, int element_bytes, const void* x, void* out,
                         int64_t n, const BroadcastIndex& index) {
  if (n <= 0) return;
  if (element_bytes == 1)
    BroadcastCopyKernel<<<Blocks(n), kThreads, 0, stream>>>(static_cast<const uint8_t*>(x), static_cast<uint8_t*>(out), n, index);
  else if (element_bytes == 4)
    BroadcastCopyKernel<<<Blocks(n), kThreads, 0, stream>>>(static_cast<const uint32_t*>(x), static_cast<uint32_t*>(out), n, index);
  else
    BroadcastCopyKernel<<<Blocks(n), kThreads, 0, stream>>>(static_cast<const uint64_t*>(x), static_cast<uint64_t*>(out), n, index);
}

void LaunchSelect(cudaStream_t stream, int element_bytes, const bool* condition, const void* t,
                  const void* e, void* out, int64_t n, const BroadcastIndex& index) {
  if (n <= 0) return;
  if (element_bytes == 1)
    SelectKernel<<<Blocks(n), kThreads, 0, stream>>>(condition, static_cast<const uint8_t*>(t), static_cast<const uint8_t*>(e), static_cast<uint8_t*>(out), n, index);
  else if (element_bytes == 4)
    SelectKernel<<<Blocks(n), kThreads, 0, stream>>>(condition, static_cast<const uint32_t*>(t), static_cast<const uint32_t*>(e), static_cast<uint32_t*>(out), n, index);
  else
    SelectKernel<<<Blocks(n), kThreads, 0, stream>>>(condition, static_cast<const uint64_t*>(t), static_cast<const uint64_t*>(e), static_cast<uint64_t*>(out), n, index);
}

void LaunchUnary(cudaStream_t stream, UnaryFn fn, const float* x, float* y, int64_t n) {
  if (n > 0) UnaryKernel<<<Blocks(n), kThreads, 0, stream>>>(fn, x, y, n);
}

template <typename T>
void LaunchBinaryOf(cudaStream_t stream, BinaryFn fn, const void* x, const void* y, void* z,
                    int64_t n, bool same_shape, const BroadcastIndex& index,
                    unsigned long long* zero_divisor) {
  auto* xt = static_cast<const T*>(x);
  auto* yt = static_cast<const T*>(y);
  auto* zt = static_cast<T*>(z);
  if (same_shape)
    BinarySameShapeKernel<<<Blocks(n), kThreads, 0, stream>>>(fn, xt, yt, zt, n, zero_divisor);
  else
    BinaryBroadcastKernel<<<Blocks(n), kThreads, 0, stream>>>(fn, xt, yt, zt, n, index, zero_divisor);
}

void LaunchBinary(cudaStream_t stream, BinaryFn fn, CastType type, const void* x, const void* y,
                  void* z, int64_t n, bool same_shape, const BroadcastIndex& index,
                  unsigned long long* zero_divisor) {
  if (n <= 0) return;
  switch (type) {
    case CastType::kI32: return LaunchBinaryOf<int32_t>(stream, fn, x, y, z, n, same_shape, index, zero_divisor);
    case CastType::kI64: return LaunchBinaryOf<int64_t>(stream, fn, x, y, z, n, same_shape, index, zero_divisor);
    default: return LaunchBinaryOf<float>(stream, fn, x, y, z, n, same_shape, index, zero_divisor);
  }
}

void LaunchBiasAdd(cudaStream_t stream, const float* x, const float* bias, float* y, int64_t n,
                   int64_t channels) {
  if (n > 0) BiasAddKernel<<<Blocks(n), kThreads, 0, stream>>>(x, bias, y, n, channels);
}

void LaunchAccumulate(cudaStream_t stream, const float* x, float* acc, int64_t n) {
  if (n > 0) AccumulateKernel<<<Blocks(n), kThreads, 0, stream>>>(x, acc, n);
}

void LaunchFill8(cudaStream_t stream, uint8_t bits, void* out, int64_t n) {
  if (n > 0) FillKernel<<<Blocks(n), kThreads, 0, stream>>>(bits, static_cast<uint8_t*>(out), n);
}

void LaunchFill32(cudaStream_t stream, uint32_t bits, void* out, int64_t n) {
  if (n > 0) FillKernel<<<Blocks(n), kThreads, 0, stream>>>(bits, static_cast<uint32_t*>(out), n);
}

void LaunchFill64(cudaStream_t stream, uint64_t bits, void* out, int64_t n) {
  if (n > 0) FillKernel<<<Blocks(n), kThreads, 0, stream>>>(bits, static_cast<uint64_t*>(out), n);
}

void LaunchCast(cudaStream_t stream, CastType from, const void* x, CastType to, void* y,
                int64_t n, bool truncate) {
  if (n <= 0) return;
  using enum CastType;
  switch (from) {
    case kF32: CastFrom(stream, static_cast<const float*>(x), to, y, n, truncate); break;
    case kF64: CastFrom(stream, static_cast<const double*>(x), to, y, n, truncate); break;
    case kI32: CastFrom(stream, static_cast<const int32_t*>(x), to, y, n, truncate); break;
    case kI64: CastFrom(stream, static_cast<const int64_t*>(x), to, y, n, truncate); break;
    case kBool: CastFrom(stream, static_cast<const bool*>(x), to, y, n, truncate); break;
    case kU8: CastFrom(stream, static_cast<const uint8_t*>(x), to, y, n, truncate); break;
    case kI8: CastFrom(stream, static_cast<const int8_t*>(x), to, y, n, truncate); break;
    case kF16: CastFrom(stream, static_cast<const __half*>(x), to, y, n, truncate); break;
  }
}

}  // namespace dflow::cuda

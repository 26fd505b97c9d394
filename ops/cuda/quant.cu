// CUDA kernels of the int8 ops: one thread per output element, each with
// the operations of the CPU kernel it mirrors (ops/cpu/quantize.cc,
// quantize_steps.h, quantized_add.cc), so that the codes agree. The one
// freedom left is a multiply followed by an add, which either compiler may
// fuse into one rounding (nvcc does by default, GCC where the machine has
// FMA): a value within an ulp of a rounding tie may then take the other
// code. The int8 products sum exactly in int32, in any order.
//
// The convolution and the dense layer are direct loops (each thread its
// output's window or row): correct for every geometry and simple, not tuned;
// a GPU's int8 tensor cores would want an implicit GEMM (as conv_gemm.cu
// does for float) with dp4a or IMMA.
#include "ops/cuda/grid.cuh"
#include "ops/cuda/quant_launch.h"

namespace dflow::cuda {
namespace {

// The CPU's rounding (ops/cpu/quantize.cc) for |v| < 2^23: truncate, then correct.
__device__ float RoundHalfAway(float v) {
  const float t = static_cast<float>(static_cast<int32_t>(v)), d = v - t;
  return t + (d >= 0.5f ? 1.0f : 0.0f) - (d <= -0.5f ? 1.0f : 0.0f);
}
__device__ float RoundHalfEven(float v) {
  const auto i = static_cast<int32_t>(v);
  const float t = static_cast<float>(i), d = v - t;
  const bool odd = (i & 1) != 0;
  return t + (d > 0.5f || (d == 0.5f && odd) ? 1.0f : 0.0f) - (d < -0.5f || (d == -0.5f && odd) ? 1.0f : 0.0f);
}

// std::clamp's comparisons, so that NaN passes through as on the CPU.
__device__ float Clamp(float v, float lo, float hi) { return v < lo ? lo : (hi < v ? hi : v); }

template <typename T>
__global__ void QuantizeKernel(SliceIndex s, const float* x, const float* lines, bool half_to_even, T* q) {
  DFLOW_GRID_STRIDE(e, s.count) {
    const float* line = lines + (e / s.inner) % s.channels * 6;
    const float lo = line[0], hi = line[1], factor = line[2], offset = line[3], lowest = line[4], highest = line[5];
    // Clamped to a code beyond either end first (NaN to the lowest), as the CPU.
    const float below = lowest + offset - 1, above = highest + offset + 1;
    float v = Clamp(x[e], lo, hi) * factor;
    v = v > below ? v : below;
    v = v < above ? v : above;
    const float rounded = half_to_even ? RoundHalfEven(v) : RoundHalfAway(v);
    q[e] = static_cast<T>(static_cast<int32_t>(Clamp(rounded - offset, lowest, highest)));
  }
}

template <typename T>
__global__ void DequantizeKernel(SliceIndex s, const T* q, const double* lines, float* x) {
  DFLOW_GRID_STRIDE(e, s.count) {
    const double* line = lines + (e / s.inner) % s.channels * 2;
    x[e] = static_cast<float>(q[e] * line[0] + line[1]);
  }
}

// The stage after a product (ProductStage; the CPU's Requantization::Row
// and Dequantization::Row).
__device__ void Store(const ProductStage& stage, int64_t channel, int32_t acc, void* y, int64_t at) {
  const float v = static_cast<float>(acc) * stage.scale[channel] + stage.offset[channel];
  if (stage.codes) {
    // Clamped, the value is >= 0, where adding 0.5 and truncating rounds half away from zero.
    static_cast<uint8_t*>(y)[at] = static_cast<uint8_t>(static_cast<int32_t>(Clamp(v, stage.lowest, 255.0f) + 0.5f));
  } else {
    static_cast<float*>(y)[at] = v < stage.lowest ? stage.lowest : v;
  }
}

__global__ void QuantizedConvKernel(ConvShape s, const uint8_t* x, const int8_t* w, int32_t zero,
                                    ProductStage stage, void* y) {
  const int64_t count = s.batch * s.out_h * s.out_w * s.out_c;
  DFLOW_GRID_STRIDE(at, count) {
    const int64_t o = at % s.out_c, pixel = at / s.out_c;
    const int64_t ow = pixel % s.out_w, oh = pixel / s.out_w % s.out_h, n = pixel / (s.out_w * s.out_h);
    const int64_t first_c = o / (s.out_c / s.groups) * s.filter_c;
    int32_t acc = 0;
    for (int64_t kh = 0; kh < s.k_h; ++kh) {
      const int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dilation_h;
      if (ih < 0 || ih >= s.in_h) continue;  // taps in the padding add (zero - zero) * w = 0
      for (int64_t kw = 0; kw < s.k_w; ++kw) {
        const int64_t iw = ow * s.stride_w - s.pad_left + kw * s.dilation_w;
        if (iw < 0 || iw >= s.in_w) continue;
        const uint8_t* px = x + ((n * s.in_h + ih) * s.in_w + iw) * s.in_c + first_c;
        const int8_t* pw = w + (kh * s.k_w + kw) * s.filter_c * s.out_c + o;
        for (int64_t c = 0; c < s.filter_c; ++c) acc += (static_cast<int32_t>(px[c]) - zero) * pw[c * s.out_c];
      }
    }
    Store(stage, o, acc, y, at);
  }
}

__global__ void QuantizedMatMulKernel(int64_t m, int64_t k, int64_t n, bool transpose_b, const uint8_t* a,
                                      const int8_t* b, int32_t zero, ProductStage stage, uint8_t* y) {
  DFLOW_GRID_STRIDE(at, m * n) {
    const int64_t i = at / n, j = at % n;
    const uint8_t* row = a + i * k;
    const int64_t b_step = transpose_b ? 1 : n;
    const int8_t* column = b + (transpose_b ? j * k : j);
    int32_t acc = 0;
    for (int64_t p = 0; p < k; ++p) acc += (static_cast<int32_t>(row[p]) - zero) * column[p * b_step];
    Store(stage, j, acc, y, at);
  }
}

__global__ void QuantizedAddKernel(int64_t n, const uint8_t* x, const uint8_t* y, float a, float b, float c,
                                   float lowest, uint8_t* z) {
  DFLOW_GRID_STRIDE(i, n) {
    float v = static_cast<float>(x[i]) * a + static_cast<float>(y[i]) * b + c;
    v = v < lowest ? lowest : v;
    v = v > 255.0f ? 255.0f : v;
    z[i] = static_cast<uint8_t>(static_cast<int32_t>(v + 0.5f));
  }
}

__global__ void QuantizedReluKernel(int64_t n, const uint8_t* x, uint8_t zero, uint8_t* y) {
  DFLOW_GRID_STRIDE(i, n) y[i] = x[i] < zero ? zero : x[i];
}

}  // namespace

void LaunchQuantize(cudaStream_t stream, const SliceIndex& s, const float* x, const float* lines,
                    bool half_to_even, bool int8_codes, void* q) {
  if (int8_codes)
    QuantizeKernel<<<Blocks(s.count), kThreads, 0, stream>>>(s, x, lines, half_to_even, static_cast<int8_t*>(q));
  else
    QuantizeKernel<<<Blocks(s.count), kThreads, 0, stream>>>(s, x, lines, half_to_even, static_cast<uint8_t*>(q));
}

void LaunchDequantize(cudaStream_t stream, const SliceIndex& s, const void* q, bool int8_codes,
                      const double* lines, float* x) {
  if (int8_codes)
    DequantizeKernel<<<Blocks(s.count), kThreads, 0, stream>>>(s, static_cast<const int8_t*>(q), lines, x);
  else
    DequantizeKernel<<<Blocks(s.count), kThreads, 0, stream>>>(s, static_cast<const uint8_t*>(q), lines, x);
}

void LaunchQuantizedConv(cudaStream_t stream, const ConvShape& s, const uint8_t* x, const int8_t* w,
                         int32_t zero, const ProductStage& stage, void* y) {
  QuantizedConvKernel<<<Blocks(s.batch * s.out_h * s.out_w * s.out_c), kThreads, 0, stream>>>(s, x, w, zero,
                                                                                              stage, y);
}

void LaunchQuantizedMatMul(cudaStream_t stream, int64_t m, int64_t k, int64_t n, bool transpose_b,
                           const uint8_t* a, const int8_t* b, int32_t zero, const ProductStage& stage,
                           uint8_t* y) {
  QuantizedMatMulKernel<<<Blocks(m * n), kThreads, 0, stream>>>(m, k, n, transpose_b, a, b, zero, stage, y);
}

void LaunchQuantizedAdd(cudaStream_t stream, int64_t n, const uint8_t* x, const uint8_t* y, float a, float b,
                        float c, float lowest, uint8_t* z) {
  QuantizedAddKernel<<<Blocks(n), kThreads, 0, stream>>>(n, x, y, a, b, c, lowest, z);
}

void LaunchQuantizedRelu(cudaStream_t stream, int64_t n, const uint8_t* x, uint8_t zero, uint8_t* y) {
  QuantizedReluKernel<<<Blocks(n), kThreads, 0, stream>>>(n, x, zero, y);
}

}  // namespace dflow::cuda

// CUDA kernels of the int8 ops: one thread per output element, computing it
// with the element arithmetic the CPU kernels call too
// (ops/quant_arithmetic.h) and, for the products, the exact int32 sums of
// quant_sums.h, which the CPU-only tests check against the CPU kernels.
//
// The convolution and the dense layer are direct loops (each thread its
// output's window or row): correct for every geometry and simple, not tuned;
// a GPU's int8 units would want an implicit GEMM (as conv_gemm.cu does for
// float) with dp4a or the int8 tensor cores.
#include "ops/cuda/grid.cuh"
#include "ops/cuda/quant_launch.h"
#include "ops/cuda/quant_sums.h"
#include "ops/quant_arithmetic.h"

namespace dflow::cuda {
namespace {

template <typename T, bool kHalfToEven>
__global__ void QuantizeKernel(SliceIndex s, const float* x, const quant::CodeLine* lines, T* q) {
  DFLOW_GRID_STRIDE(e, s.count) q[e] = quant::Code<T, kHalfToEven>(lines[(e / s.inner) % s.channels], x[e]);
}

template <typename T>
__global__ void DequantizeKernel(SliceIndex s, const T* q, const double* lines, float* x) {
  DFLOW_GRID_STRIDE(e, s.count) {
    const double* line = lines + (e / s.inner) % s.channels * 2;
    x[e] = quant::Value(q[e], line[0], line[1]);
  }
}

// The stage after a product (ProductStage).
__device__ void Store(const ProductStage& stage, int64_t channel, int32_t acc, void* y, int64_t at) {
  const float scale = stage.scale[channel], offset = stage.offset[channel];
  if (stage.codes) static_cast<uint8_t*>(y)[at] = quant::RequantizedCode(acc, scale, offset, stage.lowest);
  else static_cast<float*>(y)[at] = quant::DequantizedValue(acc, scale, offset, stage.lowest);
}

__global__ void QuantizedConvKernel(ConvShape s, const uint8_t* x, const int8_t* w, int32_t zero,
                                    ProductStage stage, void* y) {
  DFLOW_GRID_STRIDE(at, s.batch * s.out_h * s.out_w * s.out_c)
    Store(stage, at % s.out_c, ConvWindowSum(s, x, w, zero, at), y, at);
}

__global__ void QuantizedMatMulKernel(int64_t m, int64_t k, int64_t n, bool transpose_b, const uint8_t* a,
                                      const int8_t* b, int32_t zero, ProductStage stage, uint8_t* y) {
  DFLOW_GRID_STRIDE(at, m * n) Store(stage, at % n, DenseSum(k, n, transpose_b, a, b, zero, at), y, at);
}

__global__ void QuantizedAddKernel(int64_t n, const uint8_t* x, const uint8_t* y, float a, float b, float c,
                                   float lowest, uint8_t* z) {
  DFLOW_GRID_STRIDE(i, n) z[i] = quant::AddedCode(x[i], y[i], a, b, c, lowest);
}

__global__ void QuantizedReluKernel(int64_t n, const uint8_t* x, uint8_t zero, uint8_t* y) {
  DFLOW_GRID_STRIDE(i, n) y[i] = x[i] < zero ? zero : x[i];
}

template <typename T>
void LaunchQuantizeTo(cudaStream_t stream, const SliceIndex& s, const float* x, const quant::CodeLine* lines,
                      bool half_to_even, T* q) {
  if (half_to_even) QuantizeKernel<T, true><<<Blocks(s.count), kThreads, 0, stream>>>(s, x, lines, q);
  else QuantizeKernel<T, false><<<Blocks(s.count), kThreads, 0, stream>>>(s, x, lines, q);
}

}  // namespace

void LaunchQuantize(cudaStream_t stream, const SliceIndex& s, const float* x, const float* lines,
                    bool half_to_even, bool int8_codes, void* q) {
  const auto* code_lines = reinterpret_cast<const quant::CodeLine*>(lines);
  if (int8_codes) LaunchQuantizeTo(stream, s, x, code_lines, half_to_even, static_cast<int8_t*>(q));
  else LaunchQuantizeTo(stream, s, x, code_lines, half_to_even, static_cast<uint8_t*>(q));
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

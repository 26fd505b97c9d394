// Launchers of the int8 CUDA kernels (ops/cuda/quant.cu): QuantizeV2,
// Dequantize, the fused int8 convolutions and dense layer, the int8
// residual addition and ReLU. The OpKernels around them (ops/cuda/quant.cc)
// read the ranges on the host, with the CPU's code (ops/cpu/quantize_lines.h,
// quantized_inputs.h), and upload per-slice or per-channel tables; the
// kernels apply them element by element with the arithmetic the CPU kernels
// call too (ops/quant_arithmetic.h). Each enqueues on `stream` and returns;
// the caller checks the launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/conv_shape.h"

namespace dflow::cuda {

// Element e belongs to slice (e / inner) % channels.
struct SliceIndex {
  int64_t count, channels, inner;
};

// QuantizeV2: q[e] = quant::Code of x[e] on its slice's line, `lines`
// holding a quant::CodeLine (six floats) per slice; q is int8 (int8_codes)
// or uint8; ties to even or away from zero.
void LaunchQuantize(cudaStream_t stream, const SliceIndex& s, const float* x, const float* lines,
                    bool half_to_even, bool int8_codes, void* q);
// Dequantize: x[e] = float(q[e] * step + origin) in double, `lines` holding
// (step, origin) per slice.
void LaunchDequantize(cudaStream_t stream, const SliceIndex& s, const void* q, bool int8_codes,
                      const double* lines, float* x);

// What follows an int8 product's exact int32 sum acc of output channel o:
// v = acc * scale[o] + offset[o]; codes: the uint8 code of v clamped to
// [lowest, 255] (half away from zero), else the float max(v, lowest).
struct ProductStage {
  const float* scale;
  const float* offset;
  float lowest;
  bool codes;
};

// The fused int8 convolution, every group kind (depthwise: Cg = 1):
// acc[n, oh, ow, o] = sum over the window (inside the image) and the group's
// Cg channels of (x - zero) * w[kh, kw, c, o], then the stage into y
// (uint8 or float as stage.codes says).
void LaunchQuantizedConv(cudaStream_t stream, const ConvShape& s, const uint8_t* x, const int8_t* w,
                         int32_t zero, const ProductStage& stage, void* y);
// The int8 dense layer: acc[i, j] = sum_p (a[i, p] - zero) * b[p, j] (b [n, k]
// when transpose_b), then the stage into uint8 y [m, n].
void LaunchQuantizedMatMul(cudaStream_t stream, int64_t m, int64_t k, int64_t n, bool transpose_b,
                           const uint8_t* a, const int8_t* b, int32_t zero, const ProductStage& stage,
                           uint8_t* y);

// The int8 residual addition: z = code of clamp(x * a + y * b + c, lowest, 255).
void LaunchQuantizedAdd(cudaStream_t stream, int64_t n, const uint8_t* x, const uint8_t* y, float a, float b,
                        float c, float lowest, uint8_t* z);
// The int8 ReLU: y = max(x, zero).
void LaunchQuantizedRelu(cudaStream_t stream, int64_t n, const uint8_t* x, uint8_t zero, uint8_t* y);

}  // namespace dflow::cuda

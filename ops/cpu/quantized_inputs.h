// The inputs of the fused int8 kernels (quantized_matmul.cc,
// quantized_conv.cc and the GPU's ops/cuda/quant_conv.cc), read and checked
// the same way on every device, errors naming the node.
#pragma once

#include <vector>

#include "graph/kernel.h"
#include "ops/conv.h"
#include "ops/cpu/quantize_steps.h"

namespace dflow::cpu {

// Input `input`, a float scalar, which must be finite.
float FiniteScalar(const OpKernelContext& ctx, int input);

// The MIN_FIRST uint8 codes of [min, max] (min < max), `what` naming the
// tensor in errors.
MinFirstCodes MinFirstInput(const OpKernelContext& ctx, float min, float max, const char* what);

// The SCALED int8 step of each of n channels from the range inputs
// `min_input` and `max_input` (one value each, or n), `what` naming them.
std::vector<double> ChannelSteps(const OpKernelContext& ctx, int min_input, int max_input, int64_t n,
                                 const char* what);

// The ranges of a fused int8 product (convolution or dense layer) with
// `channels` outputs: inputs 3 and 4 give its uint8 input's, 5 and 6 the
// int8 weights' (one or one per channel) and, for ...AndRequantize, 7 and 8
// the output's. The op's name says whether a ReLU follows.
struct ProductRanges {
  MinFirstCodes in;
  std::vector<double> weight_steps;
  bool relu = false;
  bool requantize = true;  // uint8 codes of [out_min, out_max] out; else float (...AndDequantize)
  MinFirstCodes out{};
  float out_min = 0, out_max = 0;
};
ProductRanges ProductRangesOf(const OpKernelContext& ctx, int64_t channels, const char* input, const char* weights);

// A fused int8 convolution's geometry (a depthwise filter [KH, KW, C, M]
// read as the grouped one [KH, KW, 1, C * M]), its bias checked, and its
// ranges; the input's range must hold 0.0, whose code pads the input.
struct QuantizedConv {
  ConvGeometry geometry;
  ProductRanges ranges;
};
QuantizedConv QuantizedConvOf(const OpKernelContext& ctx);

// A fused int8 dense layer (a [m, k] times b [k, n], or b [n, k] with
// transpose_b) and its ranges.
struct QuantizedMatMul {
  int64_t m, k, n;
  bool transpose_b;
  ProductRanges ranges;
};
QuantizedMatMul QuantizedMatMulOf(const OpKernelContext& ctx);

// Allocates outputs 1 and 2, the scalar range [min, max] of output 0's
// codes, and writes it (in host memory on every device).
void WriteOutputRange(OpKernelContext& ctx, float min, float max);
// The same, repeating the scalar range of inputs `min_input` and `min_input + 1`.
void RepeatInputRange(OpKernelContext& ctx, int min_input);

// The int8 residual addition (QuantizedAdd[AndRelu]AndRequantize: x and y
// of one shape, the ranges of x, y and the output in inputs 2-7):
// z = the code of clamp(x a + y b + c, lowest, 255), with a = sx / so,
// b = sy / so, c = zo - zx a - zy b (the sum of the values x and y stand
// for, in z's codes) and lowest the code of 0.0 after a ReLU, else 0.
struct AddLine {
  float a, b, c, lowest;
};
AddLine QuantizedAddLineOf(const OpKernelContext& ctx);

// QuantizedRelu's floor: the code of 0.0 in the range of inputs 1 and 2.
uint8_t QuantizedReluFloor(const OpKernelContext& ctx);

}  // namespace dflow::cpu

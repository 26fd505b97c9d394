// Builders for quantization: QuantizeV2 (float to int8 / uint8) and
// Dequantize, with TensorFlow's names, attrs and arithmetic for its modes
// MIN_FIRST (asymmetric: [min, max] spread over the 256 codes, 0.0 exactly a
// code, the zero point) and SCALED (symmetric: a scale per tensor, or per
// slice along `axis`, the code 0 is 0.0). The ops are declared in
// ops/quant.cc; kernels: ops/cpu/quantize.cc.
#pragma once

#include <string>

#include "graph/scope.h"
#include "ops/conv.h"

namespace dflow::ops {

struct QuantizeV2Attrs {
  std::string mode = "MIN_FIRST";              // or "SCALED"
  std::string round_mode = "HALF_AWAY_FROM_ZERO";  // or "HALF_TO_EVEN" (SCALED only)
  bool narrow_range = false;                   // SCALED: leave out the lowest code (-127..127)
  int64_t axis = -1;                           // SCALED: one range per slice along this dim
  double ensure_minimum_range = 0.01;          // the range is widened to at least this (relative)
};

struct Quantized {
  Output output;      // the codes, int8 or uint8
  Output output_min;  // the range the codes stand for (adjusted as the mode says)
  Output output_max;
};

// `input` (float32) to codes of type `dtype` (int8 or uint8); `min_range`
// and `max_range` are scalars, or vectors of the size of input's `axis` dim.
Quantized QuantizeV2(const Scope& scope, const Input& input, const Input& min_range, const Input& max_range,
                     DType dtype, QuantizeV2Attrs attrs = {});

struct DequantizeAttrs {
  std::string mode = "MIN_FIRST";  // or "SCALED"
  bool narrow_range = false;
  int64_t axis = -1;
};

// Codes back to float32, given the range QuantizeV2 returned.
Output Dequantize(const Scope& scope, const Input& input, const Input& min_range, const Input& max_range,
                  DequantizeAttrs attrs = {});

}  // namespace dflow::ops

namespace dflow::ops {

struct QuantizedMatMulAttrs {
  bool transpose_b = false;                    // b is [n, k]
  std::string input_quant_mode = "MIN_FIRST";  // a's scheme (the only one taken)
};

struct QuantizedProduct {
  Output output;      // uint8 codes of [min_freezed_output, max_freezed_output] (MIN_FIRST)
  Output min_output;  // that range, as Dequantize takes it
  Output max_output;
};

// TensorFlow's QuantizedMatMulWithBiasAndRequantize: a [m, k] uint8 (MIN_FIRST
// codes of [min_a, max_a]) times b [k, n] int8 (SCALED codes; min_b/max_b a
// scalar or one per column), plus a float bias [n], requantized to uint8
// codes of the frozen output range. The integer product is exact.
QuantizedProduct QuantizedMatMulWithBiasAndRequantize(const Scope& scope, const Input& a, const Input& b,
                                                      const Input& bias, const Input& min_a, const Input& max_a,
                                                      const Input& min_b, const Input& max_b,
                                                      const Input& min_freezed_output,
                                                      const Input& max_freezed_output,
                                                      QuantizedMatMulAttrs attrs = {});

struct QuantizedConv2DAttrs {
  Conv2DAttrs conv;        // strides, dilations, padding: the float Conv2D's
  bool relu = false;       // ...AndRelu...: negative outputs become 0.0
  bool depthwise = false;  // filter [KH, KW, C, multiplier], TensorFlow's depthwise layout
};

// TensorFlow's QuantizedConv2DWithBias[AndRelu]AndRequantize (and the
// depthwise QuantizedDepthwiseConv2DWithBias[AndRelu]AndRequantize, with
// attrs.depthwise): input [N, H, W, C] uint8 (MIN_FIRST codes of
// [min_input, max_input]) convolved with filter int8 (SCALED codes;
// min_filter/max_filter a scalar or one per output channel) as Conv2D does
// (groups included), plus a float bias [O], requantized to uint8 codes of
// the frozen output range. The integer sums are exact. A frozen range of
// [0, 6] makes it a ReLU6.
QuantizedProduct QuantizedConv2DWithBiasAndRequantize(const Scope& scope, const Input& input, const Input& filter,
                                                      const Input& bias, const Input& min_input,
                                                      const Input& max_input, const Input& min_filter,
                                                      const Input& max_filter, const Input& min_freezed_output,
                                                      const Input& max_freezed_output,
                                                      QuantizedConv2DAttrs attrs = {});

// The same convolutions with a float32 output (...AndDequantize):
// y = acc si sw[o] + bias[o], then ReLU with attrs.relu. No output range:
// dynamic quantization quantizes each input with its own range at run time.
Output QuantizedConv2DWithBiasAndDequantize(const Scope& scope, const Input& input, const Input& filter,
                                            const Input& bias, const Input& min_input, const Input& max_input,
                                            const Input& min_filter, const Input& max_filter,
                                            QuantizedConv2DAttrs attrs = {});

}  // namespace dflow::ops

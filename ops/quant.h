// Builders for quantization: QuantizeV2 (float to int8 / uint8) and
// Dequantize, with TensorFlow's names, attrs and arithmetic for its modes
// MIN_FIRST (asymmetric: [min, max] spread over the 256 codes, 0.0 exactly a
// code, the zero point) and SCALED (symmetric: a scale per tensor, or per
// slice along `axis`, the code 0 is 0.0). The ops are declared in
// ops/quant.cc; kernels: ops/cpu/quantize.cc.
#pragma once

#include <string>

#include "graph/scope.h"

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

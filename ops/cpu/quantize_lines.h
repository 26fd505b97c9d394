// QuantizeV2's and Dequantize's arithmetic per slice (ops/quant.cc has the
// formulas in the ops' docs), taken from the op's attrs and range inputs
// once, so that every device's kernel codes and decodes alike: the CPU's
// (ops/cpu/quantize.cc) and the GPU's (ops/cuda/quant.cc) apply the same
// lines to the elements.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/kernel.h"
#include "ops/quant_arithmetic.h"

namespace dflow::cpu {

// The slices a range applies to: element (o * channels + c) * inner + i has
// range c. Without an axis, one slice of everything.
struct Slices {
  int64_t outer = 1, channels = 1, inner = 1;
};
Slices SlicesOf(const Shape& shape, int64_t axis);

// QuantizeV2's slices of input 0 along the axis attr, the code type (attr
// T), the line per slice and the adjusted ranges it outputs (output_min,
// output_max); checks the ranges, naming the node. The lines are
// quant::CodeLine (ops/quant_arithmetic.h).
struct QuantizeLines {
  Slices slices;
  DType codes;
  std::vector<quant::CodeLine> lines{};
  std::vector<float> out_min{}, out_max{};
};
QuantizeLines QuantizeLinesOf(const OpKernelContext& ctx);
// Allocates QuantizeV2's outputs 1 and 2 (in host memory on every device)
// and writes the adjusted ranges.
void WriteQuantizeRanges(OpKernelContext& ctx, const QuantizeLines& lines);

// Dequantize per slice: value = code * step + origin, in double, then float.
struct ValueLine {
  double step, origin;
};
struct DequantizeLines {
  Slices slices;
  std::vector<ValueLine> lines{};
};
DequantizeLines DequantizeLinesOf(const OpKernelContext& ctx);

}  // namespace dflow::cpu

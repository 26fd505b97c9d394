#include "ops/cpu/quantize_lines.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "ops/cpu/quantize_steps.h"

namespace dflow::cpu {
namespace {

struct Range {
  float min, max;
};

// min_range and max_range as one range per slice; checks them.
std::vector<Range> RangesOf(const OpKernelContext& ctx, int64_t channels) {
  const Tensor& lo = ctx.input(1);
  const Tensor& hi = ctx.input(2);
  DFLOW_REQUIRE(lo.NumElements() == channels && hi.NumElements() == channels, ctx.node().Describe(),
                ": min_range and max_range need ", channels, " value(s), got ", lo.SummaryString(), " and ",
                hi.SummaryString());
  std::vector<Range> ranges(channels);
  for (int64_t c = 0; c < channels; ++c) {
    ranges[c] = {lo.data<float>()[c], hi.data<float>()[c]};
    DFLOW_REQUIRE(std::isfinite(ranges[c].min) && std::isfinite(ranges[c].max) && ranges[c].min <= ranges[c].max,
                  ctx.node().Describe(), ": the range must be finite with min_range <= max_range, got [",
                  ranges[c].min, ", ", ranges[c].max, "]", channels > 1 ? StrCat(" for slice ", c) : "");
  }
  return ranges;
}

// The range holds 0 and is at least ensure_minimum_range (relative) wide.
Range Widened(Range r, float ensure_minimum_range) {
  const float min = std::min(0.0f, r.min);
  const float epsilon = std::max(1.0f, std::max(std::fabs(r.min), std::fabs(r.max))) * ensure_minimum_range;
  return {min, std::max(0.0f, std::max(r.max, min + epsilon))};
}

struct CodeLimits {
  int lowest, highest;
};

CodeLimits LimitsOf(DType dtype, bool narrow_range) {
  if (dtype == DType::kUInt8) return {0 + (narrow_range ? 1 : 0), 255};
  return {-128 + (narrow_range ? 1 : 0), 127};
}

// SCALED: code = round(x * factor) within [lo / factor, hi / factor].
float ScaledFactor(Range r, CodeLimits limits) {
  const float from_min = limits.lowest * r.min > 0 ? limits.lowest / r.min : FLT_MAX;
  const float from_max = limits.highest * r.max > 0 ? limits.highest / r.max : FLT_MAX;
  return std::min(from_min, from_max);
}

bool Scaled(const Node& node) { return node.attr<std::string>("mode") == "SCALED"; }

}  // namespace

Slices SlicesOf(const Shape& shape, int64_t axis) {
  Slices s;
  if (axis < 0) {
    s.inner = shape.NumElements();
    return s;
  }
  for (int d = 0; d < shape.rank(); ++d) {
    if (d < axis) s.outer *= shape.dim(d);
    else if (d == axis) s.channels = shape.dim(d);
    else s.inner *= shape.dim(d);
  }
  return s;
}

QuantizeLines QuantizeLinesOf(const OpKernelContext& ctx) {
  const Node& node = ctx.node();
  const DType codes = node.attr<DType>("T");
  QuantizeLines out{.slices = SlicesOf(ctx.input(0).shape(), node.attr<int64_t>("axis")), .codes = codes};
  const bool scaled = Scaled(node);
  const auto ensure = static_cast<float>(node.attr<double>("ensure_minimum_range"));
  const CodeLimits full = LimitsOf(codes, false);
  const CodeLimits limits = LimitsOf(codes, scaled && node.attr<bool>("narrow_range"));
  for (const Range& given : RangesOf(ctx, out.slices.channels)) {
    Range r = Widened(given, ensure);
    float factor, offset = 0, lo, hi;
    if (scaled) {
      factor = ScaledFactor(r, limits);
      r = {limits.lowest / factor, limits.highest / factor};
      lo = r.min, hi = r.max;
    } else {
      // 256 codes over the range widened by 256 / 255: the scale (max - min) / 255.
      // The zero point is the one Dequantize and the int8 kernels read
      // (quantize_steps.h), so 0.0 codes to it even where min / step is a tie.
      const MinFirstCodes min_first = MinFirstCodesOf(r.min, r.max, full.lowest);
      factor = static_cast<float>(1.0 / min_first.step);
      offset = static_cast<float>(-min_first.zero_point);
      lo = -FLT_MAX, hi = FLT_MAX;
    }
    out.out_min.push_back(r.min);
    out.out_max.push_back(r.max);
    const auto lowest = static_cast<float>(limits.lowest), highest = static_cast<float>(limits.highest);
    out.lines.push_back({lo, hi, factor, offset, lowest, highest});
  }
  return out;
}

void WriteQuantizeRanges(OpKernelContext& ctx, const QuantizeLines& lines) {
  std::copy(lines.out_min.begin(), lines.out_min.end(), ctx.allocate_output(1, ctx.input(1).shape()).data<float>());
  std::copy(lines.out_max.begin(), lines.out_max.end(), ctx.allocate_output(2, ctx.input(2).shape()).data<float>());
}

DequantizeLines DequantizeLinesOf(const OpKernelContext& ctx) {
  const bool scaled = Scaled(ctx.node());
  const CodeLimits limits = LimitsOf(ctx.input(0).dtype(), scaled && ctx.node().attr<bool>("narrow_range"));
  DequantizeLines out{.slices = SlicesOf(ctx.input(0).shape(), ctx.node().attr<int64_t>("axis"))};
  std::vector<ValueLine>& lines = out.lines;
  for (const Range& r : RangesOf(ctx, out.slices.channels)) {
    if (scaled) {
      lines.push_back({ScaledStep(r.min, r.max, limits.lowest, limits.highest), 0});
    } else if (r.min == r.max) {
      lines.push_back({0, r.min});
    } else {
      // TensorFlow rounds min with a float copy of the step and adds a double
      // one, which leaves the zero point's value a few ulps off 0.0; one step
      // for both makes it exactly 0.0.
      const MinFirstCodes min_first = MinFirstCodesOf(r.min, r.max, limits.lowest);
      lines.push_back({min_first.step, -min_first.zero_point * min_first.step});
    }
  }
  return out;
}

}  // namespace dflow::cpu

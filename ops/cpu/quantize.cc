// QuantizeV2 and Dequantize on the CPU (ops/quant.cc has the arithmetic in
// the ops' docs; TensorFlow's formulas for MIN_FIRST and SCALED).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "graph/kernel.h"
#include "ops/cpu/quantize_steps.h"

namespace dflow {
namespace {

struct Range {
  float min, max;
};

// The slices a range applies to: element (o * channels + c) * inner + i has
// range c. Without an axis, one slice of everything.
struct Slices {
  int64_t outer = 1, channels = 1, inner = 1;
};

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

// Rounding for |v| < 2^23, by truncating to an integer and correcting, in
// arithmetic the compiler vectorises (std::round and std::rint are calls).
inline float RoundHalfAway(float v) {
  const float t = static_cast<float>(static_cast<int32_t>(v)), d = v - t;
  return t + (d >= 0.5f ? 1.0f : 0.0f) - (d <= -0.5f ? 1.0f : 0.0f);
}
inline float RoundHalfEven(float v) {
  const auto i = static_cast<int32_t>(v);
  const float t = static_cast<float>(i), d = v - t;
  const bool odd = (i & 1) != 0;
  return t + (d > 0.5f || (d == 0.5f && odd) ? 1.0f : 0.0f) - (d < -0.5f || (d == -0.5f && odd) ? 1.0f : 0.0f);
}

// code = round(clamp(x, lo, hi) * factor) - offset, clamped to the codes.
// The scaled value is first clamped to a code beyond either end, which
// changes no code and keeps it in RoundHalf*'s range; NaN becomes the
// lowest code.
struct CodeLine {
  float lo, hi, factor, offset, lowest, highest;

  template <typename Round, typename T>
  void Codes(Round round, const float* x, int64_t n, T* q) const {
    const float below = lowest + offset - 1, above = highest + offset + 1;
    for (int64_t i = 0; i < n; ++i) {
      float v = std::clamp(x[i], lo, hi) * factor;
      v = v > below ? v : below;  // (NaN fails the comparison)
      v = v < above ? v : above;
      q[i] = static_cast<T>(std::clamp(round(v) - offset, lowest, highest));
    }
  }
};

template <typename T>
void QuantizeSlices(const OpKernelContext& ctx, const float* x, T* q, float* out_min, float* out_max,
                    const Slices& s, const std::vector<Range>& ranges) {
  const Node& node = ctx.node();
  const bool scaled = node.attr<std::string>("mode") == "SCALED";
  const bool to_even = node.attr<std::string>("round_mode") == "HALF_TO_EVEN";
  const auto ensure = static_cast<float>(node.attr<double>("ensure_minimum_range"));
  const CodeLimits full = LimitsOf(kDTypeOf<T>, false);
  const CodeLimits limits = LimitsOf(kDTypeOf<T>, scaled && node.attr<bool>("narrow_range"));
  for (int64_t c = 0; c < s.channels; ++c) {
    Range r = Widened(ranges[c], ensure);
    float factor, offset = 0, lo, hi;
    if (scaled) {
      factor = ScaledFactor(r, limits);
      r = {limits.lowest / factor, limits.highest / factor};
      lo = r.min, hi = r.max;
    } else {
      // 256 codes over the range widened by 256 / 255: the scale (max - min) / 255.
      // The zero point is the one Dequantize and the int8 kernels read
      // (quantize_steps.h), so 0.0 codes to it even where min / step is a tie.
      const cpu::MinFirstCodes codes = cpu::MinFirstCodesOf(r.min, r.max, full.lowest);
      factor = static_cast<float>(1.0 / codes.step);
      offset = static_cast<float>(-codes.zero_point);
      lo = -FLT_MAX, hi = FLT_MAX;
    }
    out_min[c] = r.min, out_max[c] = r.max;
    const CodeLine line{lo, hi, factor, offset, static_cast<float>(limits.lowest), static_cast<float>(limits.highest)};
    for (int64_t o = 0; o < s.outer; ++o) {
      const int64_t base = (o * s.channels + c) * s.inner;
      if (to_even) line.Codes(RoundHalfEven, x + base, s.inner, q + base);
      else line.Codes(RoundHalfAway, x + base, s.inner, q + base);
    }
  }
}

class QuantizeV2Kernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Slices s = SlicesOf(input.shape(), node().attr<int64_t>("axis"));
    const std::vector<Range> ranges = RangesOf(ctx, s.channels);
    Tensor& q = ctx.allocate_output(0, input.shape());
    float* out_min = ctx.allocate_output(1, ctx.input(1).shape()).data<float>();
    float* out_max = ctx.allocate_output(2, ctx.input(2).shape()).data<float>();
    if (q.dtype() == DType::kInt8)
      QuantizeSlices(ctx, input.data<float>(), q.data<int8_t>(), out_min, out_max, s, ranges);
    else
      QuantizeSlices(ctx, input.data<float>(), q.data<uint8_t>(), out_min, out_max, s, ranges);
  }
};

template <typename T>
void DequantizeSlices(const OpKernelContext& ctx, const T* q, float* x, const Slices& s,
                      const std::vector<Range>& ranges) {
  const bool scaled = ctx.node().attr<std::string>("mode") == "SCALED";
  const CodeLimits limits = LimitsOf(kDTypeOf<T>, scaled && ctx.node().attr<bool>("narrow_range"));
  for (int64_t c = 0; c < s.channels; ++c) {
    const Range r = ranges[c];
    // value = code * step + origin
    double step, origin;
    if (scaled) {
      step = cpu::ScaledStep(r.min, r.max, limits.lowest, limits.highest);
      origin = 0;
    } else if (r.min == r.max) {
      step = 0, origin = r.min;
    } else {
      // TensorFlow rounds min with a float copy of the step and adds a double
      // one, which leaves the zero point's value a few ulps off 0.0; one step
      // for both makes it exactly 0.0.
      const cpu::MinFirstCodes codes = cpu::MinFirstCodesOf(r.min, r.max, limits.lowest);
      step = codes.step;
      origin = -codes.zero_point * codes.step;
    }
    for (int64_t o = 0; o < s.outer; ++o) {
      const int64_t base = (o * s.channels + c) * s.inner;
      for (int64_t i = 0; i < s.inner; ++i) x[base + i] = static_cast<float>(q[base + i] * step + origin);
    }
  }
}

class DequantizeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Slices s = SlicesOf(input.shape(), node().attr<int64_t>("axis"));
    const std::vector<Range> ranges = RangesOf(ctx, s.channels);
    float* x = ctx.allocate_output(0, input.shape()).data<float>();
    if (input.dtype() == DType::kInt8) DequantizeSlices(ctx, input.data<int8_t>(), x, s, ranges);
    else DequantizeSlices(ctx, input.data<uint8_t>(), x, s, ranges);
  }
};

REGISTER_KERNEL("QuantizeV2", "CPU", QuantizeV2Kernel);
REGISTER_KERNEL("Dequantize", "CPU", DequantizeKernel);

}  // namespace
}  // namespace dflow

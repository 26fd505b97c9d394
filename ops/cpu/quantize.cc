// QuantizeV2 and Dequantize on the CPU (ops/quant.cc has the arithmetic in
// the ops' docs; TensorFlow's formulas for MIN_FIRST and SCALED): the lines
// of ops/cpu/quantize_lines.h applied to each slice.
#include <algorithm>
#include <cmath>

#include "graph/kernel.h"
#include "ops/cpu/quantize_lines.h"

namespace dflow {
namespace {

// Rounding for |v| < 2^23, by truncating to an integer and correcting, in
// arithmetic the compiler vectorises (std::round and std::rint are calls).
// The GPU's kernel (ops/cuda/quant.cu) rounds with the same operations.
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
// lowest code. The line by value: a store through a byte pointer may alias
// anything, so fields read through a reference would be reloaded each element.
template <typename Round, typename T>
void Codes(const cpu::CodeLine line, Round round, const float* x, int64_t n, T* q) {
  const float below = line.lowest + line.offset - 1, above = line.highest + line.offset + 1;
  for (int64_t i = 0; i < n; ++i) {
    float v = std::clamp(x[i], line.lo, line.hi) * line.factor;
    v = v > below ? v : below;  // (NaN fails the comparison)
    v = v < above ? v : above;
    q[i] = static_cast<T>(std::clamp(round(v) - line.offset, line.lowest, line.highest));
  }
}

template <typename T>
void QuantizeSlices(const OpKernelContext& ctx, const float* x, T* q, const cpu::QuantizeLines& lines) {
  const bool to_even = ctx.node().attr<std::string>("round_mode") == "HALF_TO_EVEN";
  const cpu::Slices& s = lines.slices;
  for (int64_t c = 0; c < s.channels; ++c) {
    for (int64_t o = 0; o < s.outer; ++o) {
      const int64_t base = (o * s.channels + c) * s.inner;
      if (to_even) Codes(lines.lines[c], RoundHalfEven, x + base, s.inner, q + base);
      else Codes(lines.lines[c], RoundHalfAway, x + base, s.inner, q + base);
    }
  }
}

class QuantizeV2Kernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const cpu::QuantizeLines lines = cpu::QuantizeLinesOf(ctx);
    Tensor& q = ctx.allocate_output(0, input.shape());
    cpu::WriteQuantizeRanges(ctx, lines);
    if (lines.codes == DType::kInt8) QuantizeSlices(ctx, input.data<float>(), q.data<int8_t>(), lines);
    else QuantizeSlices(ctx, input.data<float>(), q.data<uint8_t>(), lines);
  }
};

template <typename T>
void DequantizeSlices(const T* q, float* x, const cpu::DequantizeLines& lines) {
  const cpu::Slices& s = lines.slices;
  for (int64_t c = 0; c < s.channels; ++c) {
    const double step = lines.lines[c].step, origin = lines.lines[c].origin;
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
    const cpu::DequantizeLines lines = cpu::DequantizeLinesOf(ctx);
    float* x = ctx.allocate_output(0, input.shape()).data<float>();
    if (input.dtype() == DType::kInt8) DequantizeSlices(input.data<int8_t>(), x, lines);
    else DequantizeSlices(input.data<uint8_t>(), x, lines);
  }
};

REGISTER_KERNEL("QuantizeV2", "CPU", QuantizeV2Kernel);
REGISTER_KERNEL("Dequantize", "CPU", DequantizeKernel);

}  // namespace
}  // namespace dflow

// QuantizeV2 and Dequantize on the CPU (ops/quant.cc has the arithmetic in
// the ops' docs; TensorFlow's formulas for MIN_FIRST and SCALED): the lines
// of ops/cpu/quantize_lines.h applied to each slice with the element
// arithmetic every device shares (ops/quant_arithmetic.h).
#include <algorithm>

#include "graph/kernel.h"
#include "ops/cpu/quantize_lines.h"

namespace dflow {
namespace {

// x's codes on `line` (quant::Code). The line by value: a store through a
// byte pointer may alias anything, so fields read through a reference would
// be reloaded each element.
template <typename T, bool kHalfToEven>
void Codes(const quant::CodeLine line, const float* x, int64_t n, T* q) {
  for (int64_t i = 0; i < n; ++i) q[i] = quant::Code<T, kHalfToEven>(line, x[i]);
}

template <typename T>
void QuantizeSlices(const OpKernelContext& ctx, const float* x, T* q, const cpu::QuantizeLines& lines) {
  const bool to_even = ctx.node().attr<std::string>("round_mode") == "HALF_TO_EVEN";
  const cpu::Slices& s = lines.slices;
  for (int64_t c = 0; c < s.channels; ++c) {
    for (int64_t o = 0; o < s.outer; ++o) {
      const int64_t base = (o * s.channels + c) * s.inner;
      if (to_even) Codes<T, true>(lines.lines[c], x + base, s.inner, q + base);
      else Codes<T, false>(lines.lines[c], x + base, s.inner, q + base);
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
      for (int64_t i = 0; i < s.inner; ++i) x[base + i] = quant::Value(q[base + i], step, origin);
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

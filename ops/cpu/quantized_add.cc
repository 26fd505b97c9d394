// QuantizedAdd[AndRelu]AndRequantize and QuantizedRelu on the CPU: the
// residual addition and the ReLU of an int8 network (ops/quant.cc has the
// arithmetic in the ops' docs).
#include <algorithm>
#include <cmath>

#include "graph/kernel.h"
#include "graph/thread_pool.h"
#include "ops/cpu/quantize_steps.h"

namespace dflow {
namespace {

float Scalar(const OpKernelContext& ctx, int input, const char* name) {
  const Tensor& t = ctx.input(input);
  DFLOW_REQUIRE(t.NumElements() == 1, ctx.node().Describe(), ": ", name, " must be a scalar, got ", t.SummaryString());
  const float v = t.data<float>()[0];
  DFLOW_REQUIRE(std::isfinite(v), ctx.node().Describe(), ": ", name, " must be finite, got ", v);
  return v;
}

// The MIN_FIRST codes of the range in inputs `min` and `min + 1`.
cpu::MinFirstCodes CodesOf(const OpKernelContext& ctx, int min, const char* what) {
  const float lo = Scalar(ctx, min, what), hi = Scalar(ctx, min + 1, what);
  DFLOW_REQUIRE(lo < hi, ctx.node().Describe(), ": the range of ", what, " must have min < max, got [", lo, ", ",
                hi, "]");
  return cpu::MinFirstCodesOf(lo, hi, 0);
}

// z = clamp(x a + y b + c, lowest, 255) rounded, with a = sx / so, b = sy / so,
// c = zo - zx a - zy b: the sum of the values x and y stand for, in z's codes.
class QuantizedAddKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    DFLOW_REQUIRE(x.shape() == y.shape(), node().Describe(), ": x and y must have one shape, got ",
                  x.shape().ToString(), " and ", y.shape().ToString());
    const cpu::MinFirstCodes cx = CodesOf(ctx, 2, "x"), cy = CodesOf(ctx, 4, "y"), cz = CodesOf(ctx, 6, "the output");
    const float a = static_cast<float>(cx.step / cz.step), b = static_cast<float>(cy.step / cz.step);
    const float c = static_cast<float>(cz.zero_point - cx.zero_point * cx.step / cz.step -
                                       cy.zero_point * cy.step / cz.step);
    const bool relu = node().op() == "QuantizedAddAndReluAndRequantize";
    const float lowest = relu ? static_cast<float>(std::clamp(cz.zero_point, 0.0, 255.0)) : 0.0f;
    const uint8_t* px = x.data<uint8_t>();
    const uint8_t* py = y.data<uint8_t>();
    uint8_t* pz = ctx.allocate_output(0, x.shape()).data<uint8_t>();
    // Plain arithmetic the compiler vectorises; a pool task per 64 Ki elements.
    constexpr int64_t kBlock = 1 << 16;
    const int64_t n = x.NumElements();
    // The constants by value: a store through uint8_t* may alias anything,
    // so values read through references would be reloaded every element.
    ctx.pool().ParallelFor((n + kBlock - 1) / kBlock, kBlock, [=](int64_t first, int64_t last) {
      const int64_t end = std::min(n, last * kBlock);
      for (int64_t i = first * kBlock; i < end; ++i) {
        float v = static_cast<float>(px[i]) * a + static_cast<float>(py[i]) * b + c;
        v = v < lowest ? lowest : v;
        v = v > 255.0f ? 255.0f : v;
        // Clamped, the value is >= 0, where adding 0.5 and truncating rounds half away from zero.
        pz[i] = static_cast<uint8_t>(static_cast<int32_t>(v + 0.5f));
      }
    });
    *ctx.allocate_output(1, Shape()).data<float>() = ctx.input(6).data<float>()[0];
    *ctx.allocate_output(2, Shape()).data<float>() = ctx.input(7).data<float>()[0];
  }
};

// y = max(x, the zero point's code), in x's range.
class QuantizedReluKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const cpu::MinFirstCodes codes = CodesOf(ctx, 1, "features");
    const uint8_t zero = static_cast<uint8_t>(std::clamp(codes.zero_point, 0.0, 255.0));
    const uint8_t* px = x.data<uint8_t>();
    uint8_t* py = ctx.allocate_output(0, x.shape()).data<uint8_t>();
    for (int64_t i = 0; i < x.NumElements(); ++i) py[i] = std::max(px[i], zero);
    *ctx.allocate_output(1, Shape()).data<float>() = ctx.input(1).data<float>()[0];
    *ctx.allocate_output(2, Shape()).data<float>() = ctx.input(2).data<float>()[0];
  }
};

REGISTER_KERNEL("QuantizedRelu", "CPU", QuantizedReluKernel);
REGISTER_KERNEL("QuantizedAddAndRequantize", "CPU", QuantizedAddKernel);
REGISTER_KERNEL("QuantizedAddAndReluAndRequantize", "CPU", QuantizedAddKernel);

}  // namespace
}  // namespace dflow

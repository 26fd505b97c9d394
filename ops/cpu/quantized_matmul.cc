// QuantizedMatMulWithBiasAndRequantize on the CPU: the exact integer product
// of cpu::Int8Rhs (ops/cpu/int8_gemm.h), then bias and requantization (the
// arithmetic is in the op's doc, ops/quant.cc).
#include <cmath>
#include <vector>

#include "graph/kernel.h"
#include "ops/cpu/int8_gemm.h"
#include "ops/cpu/quantize_steps.h"

namespace dflow {
namespace {

float Scalar(const OpKernelContext& ctx, int input) {
  const float v = ctx.input(input).data<float>()[0];
  DFLOW_REQUIRE(std::isfinite(v), ctx.node().Describe(), ": input ", input, " must be finite, got ", v);
  return v;
}

// a's and the output's uint8 codes (MIN_FIRST).
cpu::MinFirstCodes MinFirstOf(const OpKernelContext& ctx, float min, float max, const char* what) {
  DFLOW_REQUIRE(min < max, ctx.node().Describe(), ": the range of ", what, " must have min < max, got [", min, ", ",
                max, "]");
  return cpu::MinFirstCodesOf(min, max, 0);
}

// b's step per column (SCALED int8).
std::vector<double> ColumnSteps(const OpKernelContext& ctx, int64_t n) {
  const Tensor& lo = ctx.input(5);
  const Tensor& hi = ctx.input(6);
  DFLOW_REQUIRE(lo.NumElements() == hi.NumElements() && (lo.NumElements() == 1 || lo.NumElements() == n),
                ctx.node().Describe(), ": min_b and max_b need 1 or ", n, " values, got ", lo.SummaryString(), " and ",
                hi.SummaryString());
  std::vector<double> steps(n);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t at = lo.NumElements() == 1 ? 0 : j;
    const float min = lo.data<float>()[at], max = hi.data<float>()[at];
    DFLOW_REQUIRE(std::isfinite(min) && std::isfinite(max) && min <= max, ctx.node().Describe(),
                  ": b's range must be finite with min <= max, got [", min, ", ", max, "]");
    steps[j] = cpu::ScaledStep(min, max, -128, 127);
  }
  return steps;
}

class QuantizedMatMulKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const bool tb = node().attr<bool>("transpose_b");
    const int64_t m = a.dim(0), k = a.dim(1), n = tb ? b.dim(0) : b.dim(1);
    const cpu::MinFirstCodes in = MinFirstOf(ctx, Scalar(ctx, 3), Scalar(ctx, 4), "a");
    const float out_min = Scalar(ctx, 7), out_max = Scalar(ctx, 8);
    const cpu::MinFirstCodes out = MinFirstOf(ctx, out_min, out_max, "the output");
    const std::vector<double> b_steps = ColumnSteps(ctx, n);
    const float* bias = ctx.input(2).data<float>();

    std::vector<int8_t> b_kn;
    const int8_t* b_data = b.data<int8_t>();
    if (tb) {  // [n, k] -> [k, n]
      b_kn.resize(k * n);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t p = 0; p < k; ++p) b_kn[p * n + j] = b_data[j * k + p];
      b_data = b_kn.data();
    }
    std::vector<int32_t> acc(m * n);
    cpu::Int8Rhs(b_data, k, n).Multiply(ctx.device().compute_pool(), a.data<uint8_t>(), m,
                                        static_cast<int32_t>(in.zero_point), acc.data());

    uint8_t* codes = ctx.allocate_output(0, Shape{m, n}).data<uint8_t>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double y = acc[i * n + j] * (in.step * b_steps[j]) + bias[j];
        codes[i * n + j] = static_cast<uint8_t>(std::clamp(std::round(y / out.step) + out.zero_point, 0.0, 255.0));
      }
    *ctx.allocate_output(1, Shape()).data<float>() = out_min;
    *ctx.allocate_output(2, Shape()).data<float>() = out_max;
  }
};

REGISTER_KERNEL("QuantizedMatMulWithBiasAndRequantize", "CPU", QuantizedMatMulKernel);

}  // namespace
}  // namespace dflow

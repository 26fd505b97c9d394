#include "ops/cpu/quantized_inputs.h"

#include <cmath>

namespace dflow::cpu {

float FiniteScalar(const OpKernelContext& ctx, int input) {
  const float v = ctx.input(input).data<float>()[0];
  DFLOW_REQUIRE(std::isfinite(v), ctx.node().Describe(), ": input ", input, " must be finite, got ", v);
  return v;
}

MinFirstCodes MinFirstInput(const OpKernelContext& ctx, float min, float max, const char* what) {
  DFLOW_REQUIRE(min < max, ctx.node().Describe(), ": the range of ", what, " must have min < max, got [", min, ", ",
                max, "]");
  return MinFirstCodesOf(min, max, 0);
}

std::vector<double> ChannelSteps(const OpKernelContext& ctx, int min_input, int max_input, int64_t n,
                                 const char* what) {
  const Tensor& lo = ctx.input(min_input);
  const Tensor& hi = ctx.input(max_input);
  DFLOW_REQUIRE(lo.NumElements() == hi.NumElements() && (lo.NumElements() == 1 || lo.NumElements() == n),
                ctx.node().Describe(), ": the range of ", what, " needs 1 or ", n, " values, got ",
                lo.SummaryString(), " and ", hi.SummaryString());
  std::vector<double> steps(n);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t at = lo.NumElements() == 1 ? 0 : j;
    const float min = lo.data<float>()[at], max = hi.data<float>()[at];
    DFLOW_REQUIRE(std::isfinite(min) && std::isfinite(max) && min <= max, ctx.node().Describe(), ": ", what,
                  "'s range must be finite with min <= max, got [", min, ", ", max, "]");
    steps[j] = ScaledStep(min, max, -128, 127);
  }
  return steps;
}

}  // namespace dflow::cpu

#include "ops/cpu/quantized_inputs.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/cpu/conv_util.h"

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

ProductRanges ProductRangesOf(const OpKernelContext& ctx, int64_t channels, const char* input, const char* weights) {
  const std::string& op = ctx.node().op();
  ProductRanges r;
  r.in = MinFirstInput(ctx, FiniteScalar(ctx, 3), FiniteScalar(ctx, 4), input);
  r.weight_steps = ChannelSteps(ctx, 5, 6, channels, weights);
  r.relu = op.find("Relu") != std::string::npos;
  r.requantize = !op.ends_with("AndDequantize");
  if (r.requantize) {
    r.out_min = FiniteScalar(ctx, 7), r.out_max = FiniteScalar(ctx, 8);
    r.out = MinFirstInput(ctx, r.out_min, r.out_max, "the output");
  }
  return r;
}

QuantizedConv QuantizedConvOf(const OpKernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& x = ctx.input(0);
  Shape filter = ctx.input(1).shape();
  if (node.op().find("Depthwise") != std::string::npos) {
    DFLOW_REQUIRE(filter.rank() == 4 && x.rank() == 4 && filter.dim(2) == x.dim(3), node.Describe(),
                  ": a depthwise filter must be [KH, KW, C, multiplier] for an input of C channels, got ",
                  filter.ToString(), " for ", x.shape().ToString());
    filter = Shape{filter.dim(0), filter.dim(1), 1, filter.dim(2) * filter.dim(3)};
  }
  const ConvGeometry g = KernelGeometry(node, ConvParamsOf(node), x.shape(), filter);
  DFLOW_REQUIRE(ctx.input(2).rank() == 1 && ctx.input(2).NumElements() == g.out_c, node.Describe(),
                ": bias must be a vector of the ", g.out_c, " output channels, got ", ctx.input(2).SummaryString());
  const MinFirstCodes in = MinFirstInput(ctx, FiniteScalar(ctx, 3), FiniteScalar(ctx, 4), "the input");
  // The padding is the code of 0.0, so the input's range must hold 0.0
  // (QuantizeV2's ranges always do).
  DFLOW_REQUIRE(in.zero_point >= 0 && in.zero_point <= 255, node.Describe(), ": the input's range [",
                FiniteScalar(ctx, 3), ", ", FiniteScalar(ctx, 4), "] must hold 0.0");
  return {g, ProductRangesOf(ctx, g.out_c, "the input", "the filter")};
}

QuantizedMatMul QuantizedMatMulOf(const OpKernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const bool transpose_b = ctx.node().attr<bool>("transpose_b");
  const int64_t n = transpose_b ? b.dim(0) : b.dim(1);
  return {a.dim(0), a.dim(1), n, transpose_b, ProductRangesOf(ctx, n, "a", "b")};
}

void WriteOutputRange(OpKernelContext& ctx, float min, float max) {
  *ctx.allocate_output(1, Shape()).data<float>() = min;
  *ctx.allocate_output(2, Shape()).data<float>() = max;
}

void RepeatInputRange(OpKernelContext& ctx, int min_input) {
  WriteOutputRange(ctx, ctx.input(min_input).data<float>()[0], ctx.input(min_input + 1).data<float>()[0]);
}

namespace {

float Scalar(const OpKernelContext& ctx, int input, const char* name) {
  const Tensor& t = ctx.input(input);
  DFLOW_REQUIRE(t.NumElements() == 1, ctx.node().Describe(), ": ", name, " must be a scalar, got ", t.SummaryString());
  const float v = t.data<float>()[0];
  DFLOW_REQUIRE(std::isfinite(v), ctx.node().Describe(), ": ", name, " must be finite, got ", v);
  return v;
}

// The MIN_FIRST codes of the range in inputs `min` and `min + 1`.
MinFirstCodes CodesOf(const OpKernelContext& ctx, int min, const char* what) {
  const float lo = Scalar(ctx, min, what), hi = Scalar(ctx, min + 1, what);
  DFLOW_REQUIRE(lo < hi, ctx.node().Describe(), ": the range of ", what, " must have min < max, got [", lo, ", ",
                hi, "]");
  return MinFirstCodesOf(lo, hi, 0);
}

}  // namespace

AddLine QuantizedAddLineOf(const OpKernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  DFLOW_REQUIRE(x.shape() == y.shape(), ctx.node().Describe(), ": x and y must have one shape, got ",
                x.shape().ToString(), " and ", y.shape().ToString());
  const MinFirstCodes cx = CodesOf(ctx, 2, "x"), cy = CodesOf(ctx, 4, "y"), cz = CodesOf(ctx, 6, "the output");
  const bool relu = ctx.node().op() == "QuantizedAddAndReluAndRequantize";
  return {static_cast<float>(cx.step / cz.step), static_cast<float>(cy.step / cz.step),
          static_cast<float>(cz.zero_point - cx.zero_point * cx.step / cz.step - cy.zero_point * cy.step / cz.step),
          relu ? static_cast<float>(std::clamp(cz.zero_point, 0.0, 255.0)) : 0.0f};
}

uint8_t QuantizedReluFloor(const OpKernelContext& ctx) {
  return static_cast<uint8_t>(std::clamp(CodesOf(ctx, 1, "features").zero_point, 0.0, 255.0));
}

}  // namespace dflow::cpu

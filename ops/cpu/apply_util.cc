// Run-time checks shared by the fused optimizer kernels (see apply_util.h).
#include "ops/cpu/apply_util.h"

namespace dflow::apply {
namespace {

// The apply ops have no list args, so input i is argument i.
const std::string& ArgName(const OpKernelContext& ctx, int input) {
  return ctx.node().def().inputs.at(input).name;
}

}  // namespace

void RequireScalar(const OpKernelContext& ctx, int input) {
  const Tensor& t = ctx.input(input);
  DFLOW_REQUIRE(t.rank() == 0, ctx.node().Describe(), ": ", ArgName(ctx, input),
                " must be a scalar, got shape ", t.shape().ToString());
}

std::vector<Variable*> RefVariables(const OpKernelContext& ctx, const std::vector<int>& inputs) {
  std::vector<Variable*> vars;
  for (int input : inputs) {
    Variable* var = ctx.input_variable(input);
    if (!var->initialized())
      Fail(Code::kFailedPrecondition, ctx.node().Describe(), ": ", ArgName(ctx, input),
           " (variable '", var->name(), "') is uninitialised: run its initializer (an Assign) first");
    for (size_t k = 0; k < vars.size(); ++k)
      DFLOW_REQUIRE(vars[k] != var, ctx.node().Describe(), ": ", ArgName(ctx, inputs[k]), " and ",
                    ArgName(ctx, input), " are the same variable '", var->name(),
                    "'; each needs its own");
    vars.push_back(var);
  }
  return vars;
}

void RequireVarShape(const OpKernelContext& ctx, int input, const Shape& shape,
                     const Shape& var_shape) {
  DFLOW_REQUIRE(shape == var_shape, ctx.node().Describe(), ": ", ArgName(ctx, input),
                " has shape ", shape.ToString(), " but var has shape ", var_shape.ToString());
}

}  // namespace dflow::apply

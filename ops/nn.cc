// Neural-network ops and their builders: activations (each maps "features"
// to "activations" of the same shape and dtype, element by element), BiasAdd
// and BiasAddGrad (kernels: ops/cpu/bias_add.cc), and the Dropout builder.
#include "ops/nn.h"

#include "ops/array.h"
#include "ops/math.h"
#include "ops/random.h"

namespace dflow {
namespace {

OpDefBuilder ActivationOp(std::string name, const std::vector<DType>& types, std::string doc) {
  OpDefBuilder b(std::move(name));
  b.input("features", "T").output("activations", "T").type_attr("T", types)
      .shape_fn(UnchangedShape).doc(std::move(doc));
  return b;
}

[[maybe_unused]] const OpRegistrar kActivationOps[] = {
    ActivationOp("Relu", kNumberTypes, "activations = max(features, 0)."),
    ActivationOp("Relu6", kNumberTypes, "activations = min(max(features, 0), 6)."),
    ActivationOp("LeakyRelu", kFloatTypes, "activations = features for features >= 0, else "
                                           "alpha * features.")
        .attr<double>("alpha", 0.2),
    ActivationOp("Elu", kFloatTypes, "activations = features for features > 0, else "
                                     "exp(features) - 1."),
    ActivationOp("Softplus", kFloatTypes, "activations = log(1 + exp(features)), computed as "
                                          "max(x, 0) + log1p(exp(-|x|)) so that it neither "
                                          "overflows for large x nor loses precision for very "
                                          "negative x."),
};

// value [..., C] and bias [C].
void BiasAddShape(InferenceContext& ctx) {
  const Shape& value = ctx.input_shape(0);
  const Shape& bias = ctx.input_shape(1);
  if (!bias.unknown_rank() && bias.rank() != 1)
    ctx.Fail("bias must be a vector, got shape ", bias.ToString());
  if (value.unknown_rank()) return;
  if (value.rank() < 2) ctx.Fail("value must have rank >= 2, got shape ", value.ToString());
  int64_t channels = value.dim(value.rank() - 1);
  int64_t length = bias.unknown_rank() ? -1 : bias.dim(0);
  if (channels >= 0 && length >= 0 && channels != length)
    ctx.Fail("bias has ", length, " elements but the last dim of value ", value.ToString(),
             " has ", channels);
  std::vector<int64_t> dims = value.dims();
  dims.back() = channels >= 0 ? channels : length;
  ctx.set_output(0, Shape(std::move(dims)));
}

void BiasAddGradShape(InferenceContext& ctx) {
  const Shape& g = ctx.input_shape(0);
  if (g.unknown_rank()) return ctx.set_output(0, Shape{-1});
  if (g.rank() < 2) ctx.Fail("out_backprop must have rank >= 2, got shape ", g.ToString());
  ctx.set_output(0, Shape{g.dim(g.rank() - 1)});
}

}  // namespace

REGISTER_OP("BiasAdd")
    .input("value", "T").input("bias", "T").output("output", "T")
    .type_attr("T", kFloatTypes)
    .shape_fn(BiasAddShape)
    .doc("output[..., c] = value[..., c] + bias[c]: a vector bias added along the last dim "
         "(channels, NHWC) of a tensor of rank >= 2.");

REGISTER_OP("BiasAddGrad")
    .input("out_backprop", "T").output("output", "T")
    .type_attr("T", kFloatTypes)
    .shape_fn(BiasAddGradShape)
    .doc("output[c] = sum of out_backprop[..., c] over every dim but the last (BiasAdd's "
         "gradient for the bias), accumulated in double.");

REGISTER_OP("ReluGrad")
    .input("gradients", "T").input("features", "T").output("backprops", "T")
    .type_attr("T", kNumberTypes)
    .shape_fn([](InferenceContext& ctx) {
      if (!ctx.input_shape(0).IsCompatibleWith(ctx.input_shape(1)))
        ctx.Fail("gradients ", ctx.input_shape(0).ToString(), " and features ",
                 ctx.input_shape(1).ToString(), " must have the same shape");
      ctx.set_output(0, ctx.input_shape(0).Merge(ctx.input_shape(1)));
    })
    .doc("backprops = gradients where features > 0, else 0: Relu's backward pass in one "
         "pass over memory. `features` may be Relu's input or its output.");

namespace ops {

Output ReluGrad(const Scope& scope, const Input& gradients, const Input& features) {
  return scope.AddOp("ReluGrad", {gradients, features});
}

Output Relu(const Scope& scope, const Input& features) { return scope.AddOp("Relu", {features}); }
Output Relu6(const Scope& scope, const Input& features) { return scope.AddOp("Relu6", {features}); }
Output LeakyRelu(const Scope& scope, const Input& features, LeakyReluAttrs attrs) {
  return scope.AddOp("LeakyRelu", {features}, {{"alpha", attrs.alpha}});
}
Output Elu(const Scope& scope, const Input& features) { return scope.AddOp("Elu", {features}); }
Output Softplus(const Scope& scope, const Input& features) {
  return scope.AddOp("Softplus", {features});
}

Output BiasAdd(const Scope& scope, const Input& value, const Input& bias) {
  return scope.AddOp("BiasAdd", {value, bias});
}
Output BiasAddGrad(const Scope& scope, const Input& out_backprop) {
  return scope.AddOp("BiasAddGrad", {out_backprop});
}

// keep = U[0, 1) >= rate holds with probability 1 - rate. The mask is built
// under "<name>/dropout/"; the scope's name goes to the final product.
Output Dropout(const Scope& scope, const Input& x, double rate, DropoutAttrs attrs) {
  if (!(rate >= 0 && rate < 1))
    Fail(Code::kInvalidArgument, "Dropout '", scope.NodeName("Dropout"),
         "': rate must be in [0, 1), got ", rate);
  Scope inner = scope.NewSubScope("dropout");
  Output value = x.ToOutput(inner);
  if (rate == 0) return value;
  Output uniform = RandomUniform(inner, Shape(inner, value), value.dtype(), {.seed = attrs.seed});
  Output keep = Cast(inner, GreaterEqual(inner, uniform, rate), value.dtype());
  return Mul(scope, value, Mul(inner, keep, 1.0 / (1.0 - rate)));
}

}  // namespace ops
}  // namespace dflow

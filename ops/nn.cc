// Neural-network activation ops and their builders. Each maps "features" to
// "activations" of the same shape and dtype, element by element.
#include "ops/nn.h"

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

}  // namespace

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

}  // namespace ops
}  // namespace dflow

// Fused optimizer ops (TensorFlow-1's training ops): each node updates one
// variable, and the slot variables its optimizer keeps, in place, and outputs
// the updated variable. Hyper-parameters are scalar inputs, so a learning
// rate schedule computed in the graph can feed them.
#include "ops/training.h"

#include <vector>

namespace dflow {
namespace {

enum class ArgKind {
  kSlot,    // a ref input: a variable of var's shape (accum, m, v, ...)
  kScalar,  // a hyper-parameter (lr, beta1, ...)
  kLikeVar  // a tensor of var's shape (grad)
};

struct ApplyArg {
  const char* name;
  ArgKind kind;
};

// Slots and grad must be compatible with var's shape, hyper-parameters must
// be scalars; the output has var's shape, refined by theirs.
ShapeFn ApplyShape(std::vector<ApplyArg> args) {
  return [args = std::move(args)](InferenceContext& ctx) {
    const Shape& var = ctx.input_shape(0);
    Shape out = var;
    for (size_t a = 0; a < args.size(); ++a) {
      const Shape& shape = ctx.input_shape(static_cast<int>(a) + 1);
      if (args[a].kind == ArgKind::kScalar) {
        if (!shape.unknown_rank() && shape.rank() != 0)
          ctx.Fail(args[a].name, " must be a scalar, got shape ", shape.ToString());
      } else {
        if (!var.IsCompatibleWith(shape))
          ctx.Fail(args[a].name, " has shape ", shape.ToString(), " but var has shape ",
                   var.ToString());
        out = out.Merge(shape);
      }
    }
    ctx.set_output(0, out);
  };
}

// Declares an apply op: ref input `var`, then `args` in order, all of dtype T.
OpDefBuilder ApplyOp(const char* name, std::vector<ApplyArg> args, const char* doc) {
  OpDefBuilder builder(name);
  builder.ref_input("var", "T");
  for (const ApplyArg& arg : args) {
    if (arg.kind == ArgKind::kSlot) builder.ref_input(arg.name, "T");
    else builder.input(arg.name, "T");
  }
  builder.output("output_ref", "T")
      .type_attr("T", kFloatTypes)
      .stateful()
      .shape_fn(ApplyShape(std::move(args)))
      .doc(doc);
  return builder;
}

constexpr ArgKind kSlot = ArgKind::kSlot;
constexpr ArgKind kScalar = ArgKind::kScalar;
constexpr ArgKind kLikeVar = ArgKind::kLikeVar;

[[maybe_unused]] const bool training_ops_registered = [] {
  OpRegistrar(ApplyOp("ApplyGradientDescent", {{"alpha", kScalar}, {"delta", kLikeVar}},
                      "var -= alpha * delta, in place; outputs the updated var."));
  OpRegistrar(
      ApplyOp("ApplyMomentum",
              {{"accum", kSlot}, {"lr", kScalar}, {"grad", kLikeVar}, {"momentum", kScalar}},
              "accum = accum * momentum + grad; var -= lr * accum. With use_nesterov: "
              "var -= lr * grad + lr * momentum * accum (the updated accum). In place; "
              "outputs the updated var.")
          .attr<bool>("use_nesterov", false));
  OpRegistrar(
      ApplyOp("ApplyAdam",
              {{"m", kSlot}, {"v", kSlot}, {"beta1_power", kScalar}, {"beta2_power", kScalar},
               {"lr", kScalar}, {"beta1", kScalar}, {"beta2", kScalar}, {"epsilon", kScalar},
               {"grad", kLikeVar}},
              "lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power); "
              "m = beta1 * m + (1 - beta1) * grad; v = beta2 * v + (1 - beta2) * grad^2; "
              "var -= lr_t * m / (sqrt(v) + epsilon). With use_nesterov: "
              "var -= lr_t * (beta1 * m + (1 - beta1) * grad) / (sqrt(v) + epsilon). "
              "In place; outputs the updated var.")
          .attr<bool>("use_nesterov", false));
  OpRegistrar(ApplyOp(
      "ApplyAdamW",
      {{"m", kSlot}, {"v", kSlot}, {"beta1_power", kScalar}, {"beta2_power", kScalar},
       {"lr", kScalar}, {"beta1", kScalar}, {"beta2", kScalar}, {"epsilon", kScalar},
       {"weight_decay", kScalar}, {"grad", kLikeVar}},
      "Adam with decoupled weight decay (as PyTorch's AdamW): var -= lr * weight_decay * var "
      "first, then ApplyAdam's step: lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power); "
      "m = beta1 * m + (1 - beta1) * grad; v = beta2 * v + (1 - beta2) * grad^2; "
      "var -= lr_t * m / (sqrt(v) + epsilon). In place; outputs the updated var."));
  OpRegistrar(ApplyOp("ApplyRMSProp",
                      {{"ms", kSlot}, {"mom", kSlot}, {"lr", kScalar}, {"rho", kScalar},
                       {"momentum", kScalar}, {"epsilon", kScalar}, {"grad", kLikeVar}},
                      "ms = rho * ms + (1 - rho) * grad^2; "
                      "mom = momentum * mom + lr * grad / sqrt(ms + epsilon); var -= mom. "
                      "In place; outputs the updated var."));
  OpRegistrar(ApplyOp("ApplyCenteredRMSProp",
                      {{"mg", kSlot}, {"ms", kSlot}, {"mom", kSlot}, {"lr", kScalar},
                       {"rho", kScalar}, {"momentum", kScalar}, {"epsilon", kScalar},
                       {"grad", kLikeVar}},
                      "mg = rho * mg + (1 - rho) * grad; ms = rho * ms + (1 - rho) * grad^2; "
                      "mom = momentum * mom + lr * grad / sqrt(ms - mg^2 + epsilon); "
                      "var -= mom. In place; outputs the updated var."));
  return true;
}();

}  // namespace

namespace ops {

// Literal hyper-parameters become Consts of var's dtype (Scope::AddOp takes
// the dtype of the first non-literal input, and var always is one).

Output ApplyGradientDescent(const Scope& scope, const Output& var, const Input& alpha,
                            const Input& delta) {
  return scope.AddOp("ApplyGradientDescent", {var, alpha, delta});
}

Output ApplyMomentum(const Scope& scope, const Output& var, const Output& accum, const Input& lr,
                     const Input& grad, const Input& momentum, ApplyMomentumAttrs attrs) {
  return scope.AddOp("ApplyMomentum", {var, accum, lr, grad, momentum},
                     {{"use_nesterov", attrs.use_nesterov}});
}

Output ApplyAdam(const Scope& scope, const Output& var, const Output& m, const Output& v,
                 const Input& beta1_power, const Input& beta2_power, const Input& lr,
                 const Input& beta1, const Input& beta2, const Input& epsilon, const Input& grad,
                 ApplyAdamAttrs attrs) {
  return scope.AddOp("ApplyAdam",
                     {var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad},
                     {{"use_nesterov", attrs.use_nesterov}});
}

Output ApplyAdamW(const Scope& scope, const Output& var, const Output& m, const Output& v,
                  const Input& beta1_power, const Input& beta2_power, const Input& lr,
                  const Input& beta1, const Input& beta2, const Input& epsilon,
                  const Input& weight_decay, const Input& grad) {
  return scope.AddOp("ApplyAdamW", {var, m, v, beta1_power, beta2_power, lr, beta1, beta2,
                                    epsilon, weight_decay, grad});
}

Output ApplyRMSProp(const Scope& scope, const Output& var, const Output& ms, const Output& mom,
                    const Input& lr, const Input& rho, const Input& momentum,
                    const Input& epsilon, const Input& grad) {
  return scope.AddOp("ApplyRMSProp", {var, ms, mom, lr, rho, momentum, epsilon, grad});
}

Output ApplyCenteredRMSProp(const Scope& scope, const Output& var, const Output& mg,
                            const Output& ms, const Output& mom, const Input& lr,
                            const Input& rho, const Input& momentum, const Input& epsilon,
                            const Input& grad) {
  return scope.AddOp("ApplyCenteredRMSProp",
                     {var, mg, ms, mom, lr, rho, momentum, epsilon, grad});
}

}  // namespace ops
}  // namespace dflow

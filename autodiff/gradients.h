// Reverse-mode autodiff, TensorFlow-1 style: AddGradients adds the gradient
// computation to the same graph as ordinary nodes (so gradients are placed,
// partitioned, traced and run like any other node) and returns one output
// per requested x. Each op's rule lives in autodiff/<family>_grad.cc:
//
//   // d/dx sin(x) = cos(x)
//   std::vector<Output> SinGrad(const Scope& s, Node* op, const std::vector<Output>& dy) {
//     return {ops::Mul(s, dy[0], ops::Cos(s, Input0(op)))};
//   }
//   REGISTER_GRADIENT("Sin", SinGrad);
//   REGISTER_NO_GRADIENT("Less");
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/scope.h"

namespace dflow::autodiff {

// A rule gets the forward node and the gradient of the loss with respect to
// each of its outputs (outputs no gradient reached get zeros of their shape)
// and returns one gradient per input: an invalid Output() where the input
// gets none (an int input, an axis). Returned gradients have the input's
// shape, except for inputs of ops that broadcast (OpDef::broadcasts): those
// may have the output's shape, and AddGradients sums them back down.
using GradientFn = std::vector<Output> (*)(const Scope& scope, Node* op,
                                           const std::vector<Output>& dy);

class GradientRegistry {
 public:
  static GradientRegistry& Global();
  void Register(const std::string& op, GradientFn fn);  // throws on a duplicate
  void RegisterNoGradient(const std::string& op);       // ditto
  // The rule, or null for an op declared without gradient (or unknown).
  GradientFn Find(const std::string& op) const;
  bool HasGradient(const std::string& op) const { return Find(op) != nullptr; }
  // Declared either way: a rule or an explicit "no gradient".
  bool IsDeclared(const std::string& op) const { return rules_.count(op) != 0; }

 private:
  std::map<std::string, GradientFn> rules_;  // null: declared without gradient
};

struct GradientRegistrar {
  GradientRegistrar(const std::string& op, GradientFn fn) {
    fn ? GradientRegistry::Global().Register(op, fn)
       : GradientRegistry::Global().RegisterNoGradient(op);
  }
};

#define REGISTER_GRADIENT(op, fn)                                                        \
  [[maybe_unused]] static ::dflow::autodiff::GradientRegistrar DFLOW_CONCAT(            \
      gradient_registrar_, __COUNTER__)(op, fn)
#define REGISTER_NO_GRADIENT(op)                                                         \
  [[maybe_unused]] static ::dflow::autodiff::GradientRegistrar DFLOW_CONCAT(            \
      gradient_registrar_, __COUNTER__)(op, nullptr)

// Adds d(sum of ys)/d(x) for each x to the graph, under `scope`'s name
// prefix plus "gradients/". `grad_ys` (one per y, y's shape) seeds the
// backward pass; by default every y gets ones. The result has one entry per
// x: the gradient (x's shape), or an invalid Output when no differentiable
// path leads from x to any y (test with `.valid()`). Paths through
// StopGradient, ops without a gradient and integer or bool tensors carry
// no gradient. Gradients of gradients work: the rules build ordinary ops.
// Throws kUnimplemented naming the op when a path crosses an op whose
// gradient was never declared.
std::vector<Output> AddGradients(const Scope& scope, const std::vector<Output>& ys,
                                 const std::vector<Output>& xs,
                                 const std::vector<Output>& grad_ys = {});

// Helpers for rules: the forward node's input i and output i.
inline Output Input0(Node* op) { return Output(op->input(0)); }
inline Output InputOf(Node* op, int i) { return Output(op->input(i)); }
inline Output OutputOf(Node* op, int i = 0) { return Output(op, i); }
// Is `g` the zeros AddGradients fills in for an output nothing used? A rule
// can then skip that output's share of the input gradient.
inline bool IsZeros(const Output& g) { return g.node()->op() == "ZerosLike"; }

// Can a gradient flow through a tensor of this dtype? (floating types only)
bool IsDifferentiable(DType dtype);

}  // namespace dflow::autodiff

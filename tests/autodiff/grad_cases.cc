// Numeric gradient check cases (see grad_cases.h), grouped by op family.
#include "tests/autodiff/grad_cases.h"

#include "ops/ops.h"

namespace dflow::testing {
namespace {

using In = std::vector<Output>;

GradCase Unary(std::string op, Output (*f)(const Scope&, const Input&), double lo = -1,
               double hi = 1, bool away = false) {
  return {op, {{2, 3}}, [f](const Scope& s, const In& x) { return f(s, x[0]); }, lo, hi, away};
}

// Binary ops, once with equal shapes and once broadcasting both ways.
void AddBinary(std::vector<GradCase>& cases, std::string op,
               Output (*f)(const Scope&, const Input&, const Input&), double lo = -1,
               double hi = 1, bool away = false) {
  auto build = [f](const Scope& s, const In& x) { return f(s, x[0], x[1]); };
  cases.push_back({op, {{2, 3}, {2, 3}}, build, lo, hi, away});
  cases.push_back({op, {{2, 1, 3}, {4, 1}}, build, lo, hi, away});
}

void AddMath(std::vector<GradCase>& c) {
  c.push_back(Unary("Neg", ops::Neg));
  c.push_back(Unary("Abs", ops::Abs, -1, 1, true));
  c.push_back(Unary("Exp", ops::Exp));
  c.push_back(Unary("Log", ops::Log, 0.5, 2));
  c.push_back(Unary("Log1p", ops::Log1p, -0.5, 1));
  c.push_back(Unary("Sqrt", ops::Sqrt, 0.5, 2));
  c.push_back(Unary("Rsqrt", ops::Rsqrt, 0.5, 2));
  c.push_back(Unary("Square", ops::Square));
  c.push_back(Unary("Reciprocal", ops::Reciprocal, -1, 1, true));
  c.push_back(Unary("Sin", ops::Sin, -3, 3));
  c.push_back(Unary("Cos", ops::Cos, -3, 3));
  c.push_back(Unary("Tanh", ops::Tanh, -2, 2));
  c.push_back(Unary("Sigmoid", ops::Sigmoid, -3, 3));
  AddBinary(c, "Add", ops::Add);
  AddBinary(c, "Sub", ops::Sub);
  AddBinary(c, "Mul", ops::Mul);
  AddBinary(c, "Div", ops::Div, -1, 1, true);
  AddBinary(c, "Pow", ops::Pow, 0.5, 2);
  AddBinary(c, "Maximum", ops::Maximum);
  AddBinary(c, "Minimum", ops::Minimum);
  AddBinary(c, "SquaredDifference", ops::SquaredDifference);
  // x / y stays inside (2, 3): floor(x / y) is constant near the inputs.
  c.push_back({"FloorMod", {{2, 3}, {3}}, [](const Scope& s, const In& x) {
                 return ops::FloorMod(s, ops::Add(s, x[0], 3.5), ops::Add(s, x[1], 1.4));
               }, -0.25, 0.05});
  c.push_back({"Select", {{2, 3}, {3}}, [](const Scope& s, const In& x) {
                 auto cond = ops::Const(s, Tensor::FromVector<bool>({true, false, true, false,
                                                                     false, true}, {2, 3}));
                 return ops::Select(s, cond, x[0], x[1]);
               }});
  c.push_back({"Cast", {{2, 3}}, [](const Scope& s, const In& x) {
                 return ops::Cast(s, x[0], DType::kFloat64);
               }});
  c.push_back({"AddN", {{2, 3}, {2, 3}, {2, 3}}, [](const Scope& s, const In& x) {
                 return ops::AddN(s, {x[0], ops::Mul(s, x[1], x[2]), x[0]});
               }});
}

void AddNN(std::vector<GradCase>& c) {
  c.push_back(Unary("Relu", ops::Relu, -1, 1, true));
  c.push_back({"ReluGrad", {{2, 3}, {2, 3}}, [](const Scope& s, const In& x) {
                 return ops::ReluGrad(s, ops::Square(s, x[0]), x[1]);
               }, -1, 1, true});
  c.push_back({"Relu6", {{3, 4}}, [](const Scope& s, const In& x) {
                 return ops::Relu6(s, ops::Mul(s, x[0], 5.0));  // kinks at 0 and 6 both crossed
               }, -1.5, 1.5, true});
  c.push_back(Unary("LeakyRelu", [](const Scope& s, const Input& x) {
    return ops::LeakyRelu(s, x, {.alpha = 0.3});
  }, -1, 1, true));
  c.push_back(Unary("Elu", ops::Elu, -1, 1, true));
  c.push_back(Unary("Softplus", ops::Softplus, -3, 3));
}

void AddLinalg(std::vector<GradCase>& c) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      c.push_back({"MatMul", {ta ? Shape{4, 2} : Shape{2, 4}, tb ? Shape{3, 4} : Shape{4, 3}},
                   [ta, tb](const Scope& s, const In& x) {
                     return ops::MatMul(s, x[0], x[1], {.transpose_a = ta, .transpose_b = tb});
                   }});
  c.push_back({"BatchMatMul", {{2, 2, 3}, {3, 2}}, [](const Scope& s, const In& x) {
                 return ops::BatchMatMul(s, x[0], x[1]);
               }});
  c.push_back({"BatchMatMul", {{2, 1, 3, 2}, {3, 4, 3}}, [](const Scope& s, const In& x) {
                 return ops::BatchMatMul(s, x[0], x[1], {.adj_x = true, .adj_y = true});
               }});
}

void AddSoftmax(std::vector<GradCase>& c) {
  c.push_back(Unary("Softmax", ops::Softmax, -2, 2));
  c.push_back(Unary("LogSoftmax", ops::LogSoftmax, -2, 2));
  c.push_back({"SoftmaxCrossEntropyWithLogits", {{3, 4}, {3, 4}}, [](const Scope& s, const In& x) {
                 return ops::SoftmaxCrossEntropyWithLogits(s, x[0], ops::Softmax(s, x[1])).loss;
               }, -2, 2});
  // Second order: the gradient output `backprop` itself differentiated.
  c.push_back({"SoftmaxCrossEntropyWithLogits", {{2, 3}, {2, 3}}, [](const Scope& s, const In& x) {
                 // Labels are distributions: backprop = softmax - labels is d loss
                 // / d features only when each row of labels sums to 1.
                 auto ce = ops::SoftmaxCrossEntropyWithLogits(s, x[0], ops::Softmax(s, x[1]));
                 return ops::Add(s, ops::Mul(s, ce.backprop, ce.backprop),
                                 ops::ExpandDims(s, ce.loss, -1));
               }, -2, 2});
  c.push_back({"SparseSoftmaxCrossEntropyWithLogits", {{3, 4}}, [](const Scope& s, const In& x) {
                 auto labels = ops::Const(s, Tensor::FromVector<int32_t>({2, 0, 3}));
                 return ops::SparseSoftmaxCrossEntropyWithLogits(s, x[0], labels).loss;
               }, -2, 2});
}

GradCase Reduction(std::string op, Output (*f)(const Scope&, const Input&, const Input&,
                                               ops::ReduceAttrs),
                   Shape shape, std::vector<int> axes, bool keep) {
  return {op, {shape}, [f, axes, keep](const Scope& s, const In& x) {
            return f(s, x[0], ops::Const(s, Tensor::FromVector<int32_t>(axes)), {.keep_dims = keep});
          }, 0.2, 1.5};
}

void AddReduce(std::vector<GradCase>& c) {
  using ops::Max, ops::Mean, ops::Min, ops::Prod, ops::Sum;
  for (auto [op, f] : std::vector<std::pair<std::string, decltype(&ops::Sum)>>{
           {"Sum", Sum}, {"Mean", Mean}, {"Max", Max}, {"Min", Min}, {"Prod", Prod}}) {
    c.push_back(Reduction(op, f, {2, 3, 4}, {1}, false));
    c.push_back(Reduction(op, f, {2, 3, 4}, {0, -1}, true));
    c.push_back(Reduction(op, f, {3, 2}, {}, false));
  }
  // Axes not known while building (an Add is not folded until the session
  // runs): the kept shape is computed in the graph.
  c.push_back({"Mean", {{2, 3}}, [](const Scope& s, const In& x) {
                 auto axes = ops::Add(s, ops::Const(s, Tensor::FromVector<int32_t>({-1})), 0);
                 return ops::Mean(s, x[0], axes);
               }});
  c.push_back({"SumToShape", {{2, 3, 4}}, [](const Scope& s, const In& x) {
                 return ops::SumToShape(s, x[0], {3, 1});
               }});
}

void AddArray(std::vector<GradCase>& c) {
  c.push_back(Unary("Identity", ops::Identity));
  c.push_back({"Reshape", {{2, 3}}, [](const Scope& s, const In& x) {
                 return ops::Reshape(s, x[0], {3, -1});
               }});
  c.push_back({"ExpandDims", {{2, 3}}, [](const Scope& s, const In& x) {
                 return ops::ExpandDims(s, x[0], 1);
               }});
  c.push_back({"Squeeze", {{2, 1, 3}}, [](const Scope& s, const In& x) {
                 return ops::Squeeze(s, x[0]);
               }});
  c.push_back({"BroadcastTo", {{3, 1}}, [](const Scope& s, const In& x) {
                 return ops::BroadcastTo(s, x[0], {2, 3, 4});
               }});
}

}  // namespace

void AddArrayIndexCases(std::vector<GradCase>& cases);  // grad_cases_array.cc
void AddCnnCases(std::vector<GradCase>& cases);         // grad_cases_cnn.cc
void AddConvCases(std::vector<GradCase>& cases);        // grad_cases_conv.cc
void AddDetectionCases(std::vector<GradCase>& cases);   // grad_cases_detection.cc

const std::vector<GradCase>& GradCases() {
  static const auto* cases = [] {
    auto* c = new std::vector<GradCase>;
    AddMath(*c);
    AddNN(*c);
    AddLinalg(*c);
    AddSoftmax(*c);
    AddReduce(*c);
    AddArray(*c);
    AddArrayIndexCases(*c);
    AddCnnCases(*c);
    AddConvCases(*c);
    AddDetectionCases(*c);
    return c;
  }();
  return *cases;
}

}  // namespace dflow::testing

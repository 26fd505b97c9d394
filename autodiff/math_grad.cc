// Gradient rules of the element-wise math ops (ops/math.cc). Notation: x, y
// are the inputs, z (or y for unary ops) the output, g the incoming
// gradient dL/dz. Binary ops return gradients of the output's shape; the
// builder sums them back to each input's shape (un-broadcasting).
#include "autodiff/gradients.h"
#include "ops/array.h"
#include "ops/math.h"

namespace dflow::autodiff {
namespace {

using Grads = std::vector<Output>;
using ops::Mul;

// d/dx -x = -1
Grads NegGrad(const Scope& s, Node* op, const Grads& g) { return {ops::Neg(s, g[0])}; }
// d/dx |x| = sign(x)
Grads AbsGrad(const Scope& s, Node* op, const Grads& g) {
  return {Mul(s, g[0], ops::Sign(s, Input0(op)))};
}
// d/dx e^x = e^x
Grads ExpGrad(const Scope& s, Node* op, const Grads& g) { return {Mul(s, g[0], OutputOf(op))}; }
// d/dx ln x = 1 / x
Grads LogGrad(const Scope& s, Node* op, const Grads& g) { return {ops::Div(s, g[0], Input0(op))}; }
// d/dx ln(1 + x) = 1 / (1 + x)
Grads Log1pGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::Div(s, g[0], ops::Add(s, Input0(op), 1.0))};
}
// d/dx sqrt(x) = 1 / (2 sqrt(x)) = 0.5 / y
Grads SqrtGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::Div(s, Mul(s, g[0], 0.5), OutputOf(op))};
}
// d/dx x^-1/2 = -1/2 x^-3/2 = -0.5 y^3
Grads RsqrtGrad(const Scope& s, Node* op, const Grads& g) {
  Output y = OutputOf(op);
  return {Mul(s, Mul(s, g[0], -0.5), Mul(s, y, ops::Square(s, y)))};
}
// d/dx x^2 = 2x
Grads SquareGrad(const Scope& s, Node* op, const Grads& g) {
  return {Mul(s, g[0], Mul(s, Input0(op), 2.0))};
}
// d/dx 1/x = -1/x^2 = -y^2
Grads ReciprocalGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::Neg(s, Mul(s, g[0], ops::Square(s, OutputOf(op))))};
}
// d/dx sin x = cos x
Grads SinGrad(const Scope& s, Node* op, const Grads& g) {
  return {Mul(s, g[0], ops::Cos(s, Input0(op)))};
}
// d/dx cos x = -sin x
Grads CosGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::Neg(s, Mul(s, g[0], ops::Sin(s, Input0(op))))};
}
// d/dx tanh x = 1 - y^2
Grads TanhGrad(const Scope& s, Node* op, const Grads& g) {
  return {Mul(s, g[0], ops::Sub(s, 1.0, ops::Square(s, OutputOf(op))))};
}
// d/dx sigmoid(x) = y (1 - y)
Grads SigmoidGrad(const Scope& s, Node* op, const Grads& g) {
  Output y = OutputOf(op);
  return {Mul(s, g[0], Mul(s, y, ops::Sub(s, 1.0, y)))};
}

// d(x + y) = dx + dy;  d(x - y) = dx - dy
Grads AddGrad(const Scope& s, Node* op, const Grads& g) { return {g[0], g[0]}; }
Grads SubGrad(const Scope& s, Node* op, const Grads& g) { return {g[0], ops::Neg(s, g[0])}; }
// d(xy) = y dx + x dy
Grads MulGrad(const Scope& s, Node* op, const Grads& g) {
  return {Mul(s, g[0], InputOf(op, 1)), Mul(s, g[0], Input0(op))};
}
// d(x/y) = dx / y - (x / y^2) dy = dx / y - (z / y) dy
Grads DivGrad(const Scope& s, Node* op, const Grads& g) {
  Output y = InputOf(op, 1);
  Output gx = ops::Div(s, g[0], y);
  return {gx, ops::Neg(s, Mul(s, gx, OutputOf(op)))};
}
// d(x^y) = y x^(y-1) dx + x^y ln(x) dy; the dy term is taken as 0 where
// x <= 0 (ln undefined), as TensorFlow does.
Grads PowGrad(const Scope& s, Node* op, const Grads& g) {
  Output x = Input0(op), y = InputOf(op, 1), z = OutputOf(op);
  Output gx = Mul(s, g[0], Mul(s, y, ops::Pow(s, x, ops::Sub(s, y, 1.0))));
  Output positive = ops::Greater(s, x, ops::ZerosLike(s, x));
  Output safe_x = ops::Select(s, positive, x, ops::OnesLike(s, x));
  Output log_x = ops::Select(s, positive, ops::Log(s, safe_x), ops::ZerosLike(s, x));
  return {gx, Mul(s, g[0], Mul(s, z, log_x))};
}
// The gradient goes to the input that was picked (x on ties, like TF).
Grads PickGrad(const Scope& s, const Output& x_picked, const Output& g) {
  Output zeros = ops::ZerosLike(s, g);
  return {ops::Select(s, x_picked, g, zeros), ops::Select(s, x_picked, zeros, g)};
}
Grads MaximumGrad(const Scope& s, Node* op, const Grads& g) {
  return PickGrad(s, ops::GreaterEqual(s, Input0(op), InputOf(op, 1)), g[0]);
}
Grads MinimumGrad(const Scope& s, Node* op, const Grads& g) {
  return PickGrad(s, ops::LessEqual(s, Input0(op), InputOf(op, 1)), g[0]);
}
// d(x - y)^2 = 2(x - y)(dx - dy)
Grads SquaredDifferenceGrad(const Scope& s, Node* op, const Grads& g) {
  Output gx = Mul(s, g[0], Mul(s, ops::Sub(s, Input0(op), InputOf(op, 1)), 2.0));
  return {gx, ops::Neg(s, gx)};
}
// x mod y = x - floor(x / y) y: d/dx = 1, d/dy = -floor(x / y)
Grads FloorModGrad(const Scope& s, Node* op, const Grads& g) {
  Output quotient = ops::FloorDiv(s, Input0(op), InputOf(op, 1));
  return {g[0], ops::Neg(s, Mul(s, g[0], quotient))};
}

// condition ? t : e routes the gradient to the branch that was taken.
Grads SelectGrad(const Scope& s, Node* op, const Grads& g) {
  Output zeros = ops::ZerosLike(s, g[0]);
  Output condition = Input0(op);
  return {Output(), ops::Select(s, condition, g[0], zeros), ops::Select(s, condition, zeros, g[0])};
}
// Cast between floating types casts the gradient back; from or to an
// integer type nothing flows.
Grads CastGrad(const Scope& s, Node* op, const Grads& g) {
  DType src = op->input_dtype(0);
  if (!IsDifferentiable(src) || !IsDifferentiable(op->output_dtype(0))) return {Output()};
  return {ops::Cast(s, g[0], src)};
}
// d(sum_i x_i) / dx_i = 1
Grads AddNGrad(const Scope& s, Node* op, const Grads& g) {
  return Grads(op->num_inputs(), g[0]);
}

REGISTER_GRADIENT("Neg", NegGrad);
REGISTER_GRADIENT("Abs", AbsGrad);
REGISTER_GRADIENT("Exp", ExpGrad);
REGISTER_GRADIENT("Log", LogGrad);
REGISTER_GRADIENT("Log1p", Log1pGrad);
REGISTER_GRADIENT("Sqrt", SqrtGrad);
REGISTER_GRADIENT("Rsqrt", RsqrtGrad);
REGISTER_GRADIENT("Square", SquareGrad);
REGISTER_GRADIENT("Reciprocal", ReciprocalGrad);
REGISTER_GRADIENT("Sin", SinGrad);
REGISTER_GRADIENT("Cos", CosGrad);
REGISTER_GRADIENT("Tanh", TanhGrad);
REGISTER_GRADIENT("Sigmoid", SigmoidGrad);
REGISTER_GRADIENT("Add", AddGrad);
REGISTER_GRADIENT("Sub", SubGrad);
REGISTER_GRADIENT("Mul", MulGrad);
REGISTER_GRADIENT("Div", DivGrad);
REGISTER_GRADIENT("Pow", PowGrad);
REGISTER_GRADIENT("Maximum", MaximumGrad);
REGISTER_GRADIENT("Minimum", MinimumGrad);
REGISTER_GRADIENT("SquaredDifference", SquaredDifferenceGrad);
REGISTER_GRADIENT("FloorMod", FloorModGrad);
REGISTER_GRADIENT("Select", SelectGrad);
REGISTER_GRADIENT("Cast", CastGrad);
REGISTER_GRADIENT("AddN", AddNGrad);

// Piecewise constant: the derivative is 0 almost everywhere and undefined
// at the steps, so no gradient flows (as in TensorFlow).
REGISTER_NO_GRADIENT("Sign");
REGISTER_NO_GRADIENT("Floor");
REGISTER_NO_GRADIENT("Ceil");
REGISTER_NO_GRADIENT("Round");
REGISTER_NO_GRADIENT("FloorDiv");
// Bool outputs.
REGISTER_NO_GRADIENT("Less");
REGISTER_NO_GRADIENT("LessEqual");
REGISTER_NO_GRADIENT("Greater");
REGISTER_NO_GRADIENT("GreaterEqual");
REGISTER_NO_GRADIENT("Equal");
REGISTER_NO_GRADIENT("NotEqual");
REGISTER_NO_GRADIENT("LogicalAnd");
REGISTER_NO_GRADIENT("LogicalOr");
REGISTER_NO_GRADIENT("LogicalNot");

}  // namespace
}  // namespace dflow::autodiff

// Builders for element-wise math: unary functions, binary arithmetic with
// numpy broadcasting, comparisons and logic, Select, Cast and AddN. The ops
// themselves (signatures, shape functions, docs) are declared in ops/math.cc.
#pragma once

#include <vector>

#include "graph/scope.h"

namespace dflow::ops {

// Unary, y = f(x), same shape and dtype as x.
Output Neg(const Scope& scope, const Input& x);
Output Abs(const Scope& scope, const Input& x);
Output Sign(const Scope& scope, const Input& x);
Output Exp(const Scope& scope, const Input& x);
Output Log(const Scope& scope, const Input& x);
Output Log1p(const Scope& scope, const Input& x);
Output Sqrt(const Scope& scope, const Input& x);
Output Rsqrt(const Scope& scope, const Input& x);
Output Square(const Scope& scope, const Input& x);
Output Reciprocal(const Scope& scope, const Input& x);
Output Sin(const Scope& scope, const Input& x);
Output Cos(const Scope& scope, const Input& x);
Output Tanh(const Scope& scope, const Input& x);
Output Sigmoid(const Scope& scope, const Input& x);
Output Floor(const Scope& scope, const Input& x);
Output Ceil(const Scope& scope, const Input& x);
Output Round(const Scope& scope, const Input& x);  // half to even, like TF

// Binary, z = f(x, y) with numpy broadcasting; x and y share a dtype.
Output Add(const Scope& scope, const Input& x, const Input& y);
Output Sub(const Scope& scope, const Input& x, const Input& y);
Output Mul(const Scope& scope, const Input& x, const Input& y);
Output Div(const Scope& scope, const Input& x, const Input& y);  // integers: truncating
Output Pow(const Scope& scope, const Input& x, const Input& y);
Output Maximum(const Scope& scope, const Input& x, const Input& y);
Output Minimum(const Scope& scope, const Input& x, const Input& y);
Output SquaredDifference(const Scope& scope, const Input& x, const Input& y);
Output FloorDiv(const Scope& scope, const Input& x, const Input& y);
Output FloorMod(const Scope& scope, const Input& x, const Input& y);  // sign of y, like Python

// Comparisons and logic: broadcasting, bool output.
Output Less(const Scope& scope, const Input& x, const Input& y);
Output LessEqual(const Scope& scope, const Input& x, const Input& y);
Output Greater(const Scope& scope, const Input& x, const Input& y);
Output GreaterEqual(const Scope& scope, const Input& x, const Input& y);
Output Equal(const Scope& scope, const Input& x, const Input& y);
Output NotEqual(const Scope& scope, const Input& x, const Input& y);
Output LogicalAnd(const Scope& scope, const Input& x, const Input& y);
Output LogicalOr(const Scope& scope, const Input& x, const Input& y);
Output LogicalNot(const Scope& scope, const Input& x);

// condition ? t : e, element-wise; all three broadcast together (TF's SelectV2).
Output Select(const Scope& scope, const Input& condition, const Input& t, const Input& e);

struct CastAttrs {
  bool truncate = false;  // float narrowing rounds toward zero instead of to nearest
};
Output Cast(const Scope& scope, const Input& x, DType dst, CastAttrs attrs = {});

// The element-wise sum of one or more tensors of the same shape and dtype.
Output AddN(const Scope& scope, const std::vector<Input>& inputs);

}  // namespace dflow::ops

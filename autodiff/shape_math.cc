#include "autodiff/shape_math.h"

#include <algorithm>

#include "ops/array.h"
#include "ops/math.h"
#include "ops/reduce.h"
#include "ops/state.h"

namespace dflow::autodiff {

using Ints = std::vector<int64_t>;

std::optional<Ints> KnownInts(const Output& v) {
  std::optional<Tensor> value = KnownValue(NodeOut{v.node(), v.index()});
  if (!value) return std::nullopt;
  return ReadInt64s(value->Reshaped(Shape{value->NumElements()}), v.name());
}

IntValue::IntValue(const Output& out) : known_(KnownInts(out)), shape_(out.shape()), out_(out) {}
IntValue IntValue::Scalar(int64_t value) { return IntValue({value}, Shape{}); }
IntValue IntValue::Vector(Ints values) {
  auto n = static_cast<int64_t>(values.size());
  return IntValue(std::move(values), Shape{n});
}
IntValue IntValue::Table(Ints values, int64_t rows, int64_t columns) {
  return IntValue(std::move(values), Shape{rows, columns});
}

Output IntValue::Out(const Scope& s) const {
  if (out_.valid()) return out_;
  std::vector<int32_t> narrow(known_->begin(), known_->end());
  return ops::Const(s, Tensor::FromVector(narrow, shape_));
}

namespace {

// fold(known values) when every input is known while building, else build().
template <typename Fold, typename Build>
IntValue Folded(const std::vector<IntValue>& inputs, Fold&& fold, Build&& build) {
  std::vector<Ints> values;
  for (const IntValue& in : inputs) {
    if (!in.known()) return build();
    values.push_back(*in.known());
  }
  return fold(values);
}

// a op b element-wise, a scalar broadcasting against a vector.
template <typename Fn>
IntValue Elementwise(const Scope& s, const IntValue& a, const IntValue& b, Fn fn,
                     Output (*op)(const Scope&, const Input&, const Input&)) {
  return Folded({a, b}, [&](const std::vector<Ints>& v) {
    Ints out(std::max(v[0].size(), v[1].size()));
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = fn(v[0][a.is_scalar() ? 0 : i], v[1][b.is_scalar() ? 0 : i]);
    return a.is_scalar() && b.is_scalar() ? IntValue::Scalar(out[0]) : IntValue::Vector(out);
  }, [&] { return IntValue(op(s, a.Out(s), b.Out(s))); });
}

}  // namespace

IntValue ToInt32(const Scope& s, const Output& v) {
  if (v.dtype() == DType::kInt32) return v;
  if (auto known = KnownInts(v)) {
    if (v.shape().rank() == 0) return IntValue::Scalar(known->front());
    if (v.shape().rank() == 2) return IntValue::Table(*known, v.shape().dim(0), v.shape().dim(1));
    return IntValue::Vector(*known);
  }
  return ops::Cast(s, v, DType::kInt32);
}

IntValue ShapeOf(const Scope& s, const Output& x) {
  return x.shape().IsFullyDefined() ? IntValue::Vector(x.shape().dims()) : IntValue(ops::Shape(s, x));
}

IntValue RankOf(const Scope& s, const Output& x) {
  return x.shape().unknown_rank() ? IntValue(ops::Rank(s, x)) : IntValue::Scalar(x.shape().rank());
}

IntValue SizeOf(const Scope& s, const Output& x) {
  return x.shape().IsFullyDefined() ? IntValue::Scalar(x.shape().NumElements())
                                    : IntValue(ops::Size(s, x));
}

IntValue IntAdd(const Scope& s, const IntValue& a, const IntValue& b) {
  return Elementwise(s, a, b, [](int64_t x, int64_t y) { return x + y; }, ops::Add);
}

IntValue IntSub(const Scope& s, const IntValue& a, const IntValue& b) {
  return Elementwise(s, a, b, [](int64_t x, int64_t y) { return x - y; }, ops::Sub);
}

IntValue IntMul(const Scope& s, const IntValue& a, const IntValue& b) {
  if (a.known() == Ints{1} && a.is_scalar()) return b;
  return Elementwise(s, a, b, [](int64_t x, int64_t y) { return x * y; }, ops::Mul);
}

IntValue IntCanonicalAxis(const Scope& s, const IntValue& axis, const IntValue& rank) {
  return Elementwise(s, axis, rank, [](int64_t a, int64_t r) { return r ? (a % r + r) % r : 0; },
                     ops::FloorMod);
}

IntValue IntRange(const Scope& s, const IntValue& lo, const IntValue& hi) {
  return Folded({lo, hi}, [&](const std::vector<Ints>& v) {
    Ints out;
    for (int64_t i = v[0][0]; i < v[1][0]; ++i) out.push_back(i);
    return IntValue::Vector(out);
  }, [&] { return IntValue(ops::Range(s, lo.Out(s), hi.Out(s), 1)); });
}

IntValue AsIntVector(const Scope& s, const IntValue& v) {
  return Folded({v}, [&](const std::vector<Ints>& x) { return IntValue::Vector(x[0]); },
                [&] { return IntValue(ops::ExpandDims(s, v.Out(s), 0)); });
}

IntValue IntConcat(const Scope& s, const std::vector<IntValue>& vectors) {
  if (vectors.size() == 1) return vectors[0];
  return Folded(vectors, [&](const std::vector<Ints>& v) {
    Ints out;
    for (const Ints& part : v) out.insert(out.end(), part.begin(), part.end());
    return IntValue::Vector(out);
  }, [&] {
    std::vector<Input> parts;
    for (const IntValue& v : vectors) parts.push_back(v.Out(s));
    return IntValue(ops::Concat(s, parts, 0));
  });
}

IntValue IntSlice(const Scope& s, const IntValue& v, const IntValue& begin, const IntValue& end) {
  if (begin.known() && begin.known() == end.known()) return IntValue::Vector({});
  return Folded({v, begin, end}, [&](const std::vector<Ints>& x) {
    return IntValue::Vector(Ints(x[0].begin() + x[1][0], x[0].begin() + x[2][0]));
  }, [&] {
    IntValue size = IntSub(s, end, begin);
    return IntValue(ops::Slice(s, v.Out(s), AsIntVector(s, begin).Out(s), AsIntVector(s, size).Out(s)));
  });
}

IntValue IntAt(const Scope& s, const IntValue& v, const IntValue& i) {
  return Folded({v, i}, [&](const std::vector<Ints>& x) { return IntValue::Scalar(x[0][x[1][0]]); },
                [&] { return IntValue(ops::GatherV2(s, v.Out(s), i.Out(s), 0)); });
}

IntValue IntProd(const Scope& s, const IntValue& v) {
  return Folded({v}, [&](const std::vector<Ints>& x) {
    int64_t product = 1;
    for (int64_t d : x[0]) product = CheckedMul(product, d, "a product of dimensions");
    return IntValue::Scalar(product);
  }, [&] { return IntValue(ops::Prod(s, v.Out(s), 0)); });
}

IntValue IntOneHot(const Scope& s, const IntValue& i, const IntValue& n, const IntValue& value) {
  return Folded({i, n, value}, [&](const std::vector<Ints>& x) {
    Ints out(x[1][0], 0);
    out[x[0][0]] = x[2][0];
    return IntValue::Vector(out);
  }, [&] { return IntValue(ops::OneHot(s, i.Out(s), n.Out(s), value.Out(s), 0)); });
}

IntValue IntFill(const Scope& s, const IntValue& n, int64_t value) {
  return Folded({n}, [&](const std::vector<Ints>& x) { return IntValue::Vector(Ints(x[0][0], value)); },
                [&] {
                  Output dims = AsIntVector(s, n).Out(s);
                  return IntValue(ops::Fill(s, dims, static_cast<int>(value)));
                });
}

IntValue IntColumns(const Scope& s, const IntValue& a, const IntValue& b) {
  return Folded({a, b}, [&](const std::vector<Ints>& x) {
    Ints out;
    for (size_t i = 0; i < x[0].size(); ++i) out.insert(out.end(), {x[0][i], x[1][i]});
    return IntValue::Table(out, static_cast<int64_t>(x[0].size()), 2);
  }, [&] {
    return IntValue(ops::Concat(s, {ops::ExpandDims(s, a.Out(s), 1), ops::ExpandDims(s, b.Out(s), 1)}, 1));
  });
}

IntValue IntColumn(const Scope& s, const IntValue& table, int c) {
  return Folded({table}, [&](const std::vector<Ints>& x) {
    Ints out;
    for (size_t i = c; i < x[0].size(); i += 2) out.push_back(x[0][i]);
    return IntValue::Vector(out);
  }, [&] { return IntValue(ops::Reshape(s, ops::Slice(s, table.Out(s), {0, c}, {-1, 1}), {-1})); });
}

IntValue IntFlatten(const Scope& s, const IntValue& table) {
  return Folded({table}, [&](const std::vector<Ints>& x) { return IntValue::Vector(x[0]); },
                [&] { return IntValue(ops::Reshape(s, table.Out(s), {-1})); });
}

Output SumAll(const Scope& s, const Output& x) { return ops::Sum(s, ops::Reshape(s, x, {-1}), 0); }

}  // namespace dflow::autodiff

// Int32 shape arithmetic for the array gradient rules (array_grad.cc,
// array_index_grad.cc). An IntValue is a scalar or vector that is either
// known while building (KnownValue) or computed by an Output; each helper
// computes known results right away and adds the ops that compute the others
// at run time. So a rule has one code path, is static (one Const per shape
// an op consumes) whenever the shapes allow it, and still works with dims or
// ranks unknown until run time.
#pragma once

#include <optional>
#include <vector>

#include "graph/scope.h"

namespace dflow::autodiff {

// The values of an int tensor (any rank, row-major) when known while building.
std::optional<std::vector<int64_t>> KnownInts(const Output& v);

class IntValue {
 public:
  IntValue(const Output& out);  // NOLINT: known when KnownInts(out) is
  static IntValue Scalar(int64_t value);
  static IntValue Vector(std::vector<int64_t> values);
  static IntValue Table(std::vector<int64_t> values, int64_t rows, int64_t columns);

  // The values, when known while building.
  const std::optional<std::vector<int64_t>>& known() const { return known_; }
  bool is_scalar() const { return shape_.rank() == 0; }
  // The Output: the one it was made from, or else an int32 Const of the values.
  Output Out(const Scope& s) const;

 private:
  IntValue(std::vector<int64_t> values, Shape shape) : known_(std::move(values)), shape_(std::move(shape)) {}
  std::optional<std::vector<int64_t>> known_;
  Shape shape_;  // of the values; for an Output, its static shape
  Output out_;
};

// v as int32 (int64 shapes, paddings and perms are cast).
IntValue ToInt32(const Scope& s, const Output& v);
// x's shape (a vector), rank and number of elements (scalars).
IntValue ShapeOf(const Scope& s, const Output& x);
IntValue RankOf(const Scope& s, const Output& x);
IntValue SizeOf(const Scope& s, const Output& x);

// Element-wise a + b, a - b and a * b; a scalar broadcasts.
IntValue IntAdd(const Scope& s, const IntValue& a, const IntValue& b);
IntValue IntSub(const Scope& s, const IntValue& a, const IntValue& b);
IntValue IntMul(const Scope& s, const IntValue& a, const IntValue& b);
// axis in [-rank, rank) mapped to [0, rank) (the forward op checked the range).
IntValue IntCanonicalAxis(const Scope& s, const IntValue& axis, const IntValue& rank);

// [lo, lo + 1, ..., hi - 1] for scalars lo <= hi.
IntValue IntRange(const Scope& s, const IntValue& lo, const IntValue& hi);
// [v] for a scalar v.
IntValue AsIntVector(const Scope& s, const IntValue& v);
// The vectors joined end to end.
IntValue IntConcat(const Scope& s, const std::vector<IntValue>& vectors);
// v[begin:end] for scalars begin <= end.
IntValue IntSlice(const Scope& s, const IntValue& v, const IntValue& begin, const IntValue& end);
// v[i], a scalar.
IntValue IntAt(const Scope& s, const IntValue& v, const IntValue& i);
// The product of a vector's entries (1 for an empty one).
IntValue IntProd(const Scope& s, const IntValue& v);
// A vector of length n: `value` at position i, 0 elsewhere.
IntValue IntOneHot(const Scope& s, const IntValue& i, const IntValue& n, const IntValue& value);
// A vector of length n, every entry `value`.
IntValue IntFill(const Scope& s, const IntValue& n, int64_t value);
// The [n, 2] table whose columns are the vectors a and b; column c of such a
// table; and a table's entries as a vector, row by row.
IntValue IntColumns(const Scope& s, const IntValue& a, const IntValue& b);
IntValue IntColumn(const Scope& s, const IntValue& table, int c);
IntValue IntFlatten(const Scope& s, const IntValue& table);

// The sum of every element of x, a scalar.
Output SumAll(const Scope& s, const Output& x);

}  // namespace dflow::autodiff

// Tensor shapes. A Shape may be partially known while a graph is built: a
// dimension of -1 is unknown, and Shape::Unknown() has an unknown rank.
// Tensors at run time always have fully known shapes.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace dflow {

class Shape {
 public:
  static constexpr int64_t kUnknownDim = -1;

  Shape() = default;  // a scalar: rank 0
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}
  static Shape Unknown();

  bool unknown_rank() const { return unknown_rank_; }
  int rank() const { return static_cast<int>(dims_.size()); }  // -1 is not returned; check unknown_rank()
  int64_t dim(int i) const { return dims_[i]; }
  int64_t operator[](int i) const { return dims_[i]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  void set_dim(int i, int64_t value) { dims_[i] = value; }
  void AddDim(int64_t value) { dims_.push_back(value); }

  // Known rank and every dimension known.
  bool IsFullyDefined() const;
  // Product of dimensions; -1 when any is unknown. A scalar has one element.
  // Checked: throws kInvalidArgument when the shape is too large (see CheckShapeSize).
  int64_t NumElements() const;
  // Could a tensor of shape `concrete` be of this (partial) shape?
  bool IsCompatibleWith(const Shape& other) const;
  // The most specific shape compatible with both; throws if they conflict.
  Shape Merge(const Shape& other) const;

  // "[2,?,3]", "<unknown>" or "[]"
  std::string ToString() const;

  bool operator==(const Shape& other) const {
    return unknown_rank_ == other.unknown_rank_ && dims_ == other.dims_;
  }

 private:
  std::vector<int64_t> dims_;
  bool unknown_rank_ = false;
};

// Row-major strides in elements.
std::vector<int64_t> Strides(const Shape& shape);

// Checked shape arithmetic. Every element count, byte size, derived dimension
// and index that dflow computes from dims goes through these two, so that a
// shape such as [4294967296, 4294967296] fails with kInvalidArgument instead
// of wrapping around to 0 elements (and then to a too-small buffer). `what`
// names the quantity for the message, e.g. "dimension 1 of Tile's output".
int64_t CheckedMul(int64_t a, int64_t b, std::string_view what);
int64_t CheckedAdd(int64_t a, int64_t b, std::string_view what);

// Throws kInvalidArgument naming the shape unless the product of its known,
// non-zero dims times `element_bytes` fits in int64. A shape that passes has
// an element count, a byte size and partial products of dims (a kernel's
// outer/inner counts, strides) that all fit too, even when some dim is 0.
// Graph building checks every inferred output shape, and every Tensor its
// own, so kernels may multiply the dims of their inputs freely.
void CheckShapeSize(const Shape& shape, int64_t element_bytes = 1);

}  // namespace dflow

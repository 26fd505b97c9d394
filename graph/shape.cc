#include "graph/shape.h"

#include "graph/status.h"

namespace dflow {

Shape Shape::Unknown() {
  Shape s;
  s.unknown_rank_ = true;
  return s;
}

bool Shape::IsFullyDefined() const {
  if (unknown_rank_) return false;
  for (int64_t d : dims_)
    if (d < 0) return false;
  return true;
}

int64_t Shape::NumElements() const {
  if (!IsFullyDefined()) return -1;
  CheckShapeSize(*this);
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;  // cannot overflow: checked above
  return n;
}

bool Shape::IsCompatibleWith(const Shape& other) const {
  if (unknown_rank_ || other.unknown_rank_) return true;
  if (rank() != other.rank()) return false;
  for (int i = 0; i < rank(); ++i)
    if (dims_[i] >= 0 && other.dims_[i] >= 0 && dims_[i] != other.dims_[i]) return false;
  return true;
}

Shape Shape::Merge(const Shape& other) const {
  if (unknown_rank_) return other;
  if (other.unknown_rank_) return *this;
  if (!IsCompatibleWith(other))
    Fail(Code::kInvalidArgument, "shapes ", ToString(), " and ", other.ToString(),
         " are incompatible");
  Shape merged = *this;
  for (int i = 0; i < rank(); ++i)
    if (merged.dims_[i] < 0) merged.dims_[i] = other.dims_[i];
  return merged;
}

std::string Shape::ToString() const {
  if (unknown_rank_) return "<unknown>";
  std::string s = "[";
  for (int i = 0; i < rank(); ++i) {
    if (i) s += ",";
    s += dims_[i] < 0 ? "?" : std::to_string(dims_[i]);
  }
  return s + "]";
}

std::vector<int64_t> Strides(const Shape& shape) {
  CheckShapeSize(shape);  // then no stride overflows
  std::vector<int64_t> strides(shape.rank(), 1);
  for (int i = shape.rank() - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape.dim(i + 1);
  return strides;
}

int64_t CheckedMul(int64_t a, int64_t b, std::string_view what) {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product))
    Fail(Code::kInvalidArgument, what, " is too large: ", a, " * ", b,
         " does not fit in a 64-bit integer");
  return product;
}

int64_t CheckedAdd(int64_t a, int64_t b, std::string_view what) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum))
    Fail(Code::kInvalidArgument, what, " is too large: ", a, " + ", b,
         " does not fit in a 64-bit integer");
  return sum;
}

void CheckShapeSize(const Shape& shape, int64_t element_bytes) {
  if (shape.unknown_rank()) return;
  // Zero dims are skipped: [0, 2^40, 2^40] holds no elements, but a kernel's
  // inner count over its last two dims would still overflow.
  int64_t product = element_bytes;
  for (int64_t d : shape.dims()) {
    if (d <= 0) continue;
    if (__builtin_mul_overflow(product, d, &product))
      Fail(Code::kInvalidArgument, "shape ", shape.ToString(), " has too many elements: its ",
           element_bytes == 1 ? "element count" : "size in bytes",
           " does not fit in a 64-bit integer");
  }
}

}  // namespace dflow

// Tensor: a dtype, a fully known shape and a reference-counted, contiguous,
// row-major buffer from an Allocator. Copying a Tensor shares the buffer.
#pragma once

#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/allocator.h"
#include "graph/dtype.h"
#include "graph/shape.h"
#include "graph/status.h"

namespace dflow {

// Owns bytes obtained from an allocator and returns them when the last Tensor
// that shares it goes away.
class Buffer {
 public:
  Buffer(Allocator* allocator, size_t bytes);
  // Adopts host memory that something else allocated (a received network
  // frame): `release` runs instead of a Deallocate. allocator() is then
  // CpuAllocator(), which never counted these bytes.
  Buffer(void* data, size_t bytes, std::function<void()> release);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return bytes_; }
  Allocator* allocator() const { return allocator_; }
  bool adopted() const { return static_cast<bool>(release_); }

 private:
  Allocator* allocator_;
  size_t bytes_;
  void* data_;
  std::function<void()> release_;  // set for adopted memory
};

class Tensor {
 public:
  Tensor() = default;  // an empty handle: valid() is false
  // Uninitialised contents. The shape must be fully defined.
  Tensor(DType dtype, Shape shape, Allocator* allocator = CpuAllocator());

  static Tensor Zeros(DType dtype, Shape shape, Allocator* allocator = CpuAllocator());
  // A tensor over host bytes it does not own (exactly TotalBytes() of them at
  // `data`); `release` runs when the last handle goes. `data` need only be
  // aligned to kMinAdoptedAlignment, not Allocator::kAlignment: CPU kernels
  // load and store unaligned, and their results never depend on where the
  // bytes are (tests/ops/op_test_util.cc runs every op test both ways).
  static constexpr size_t kMinAdoptedAlignment = 8;
  static Tensor Adopt(DType dtype, Shape shape, void* data, std::function<void()> release);
  template <typename T>
  static Tensor Scalar(T value) {
    Tensor t(kDTypeOf<T>, Shape{});
    *t.data<T>() = value;
    return t;
  }
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, Shape shape) {
    Tensor t(kDTypeOf<T>, std::move(shape));
    DFLOW_REQUIRE(t.NumElements() == static_cast<int64_t>(values.size()), "FromVector: ",
                  values.size(), " values do not fill shape ", t.shape().ToString());
    for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
    return t;
  }
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values) {
    return FromVector(values, Shape{static_cast<int64_t>(values.size())});
  }

  bool valid() const { return buffer_ != nullptr || dtype_ != DType::kInvalid; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t NumElements() const { return num_elements_; }
  size_t TotalBytes() const { return static_cast<size_t>(num_elements_) * DTypeSize(dtype_); }

  void* raw_data() const { return buffer_ ? buffer_->data() : nullptr; }
  template <typename T>
  T* data() const {
    CheckDType(kDTypeOf<T>);
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  std::span<T> flat() const {
    return {data<T>(), static_cast<size_t>(num_elements_)};
  }
  template <typename T>
  T scalar() const {
    DFLOW_REQUIRE(num_elements_ == 1, "expected a single-element tensor, got shape ",
                  shape_.ToString());
    return *data<T>();
  }
  template <typename T>
  std::vector<T> ToVector() const {
    auto values = flat<T>();
    return {values.begin(), values.end()};
  }

  // The same buffer seen with another shape of the same element count.
  Tensor Reshaped(Shape shape) const;
  // A deep copy into a fresh buffer.
  Tensor Clone(Allocator* allocator = CpuAllocator()) const;
  // Element-wise conversion to another dtype (float16 goes through float).
  Tensor CastTo(DType dtype) const;
  // True when both handles point at the same bytes.
  bool SharesBufferWith(const Tensor& other) const { return buffer_ == other.buffer_; }
  // How many Tensor handles share the buffer (copy-on-write uses this).
  long buffer_use_count() const { return buffer_.use_count(); }
  Allocator* allocator() const { return buffer_ ? buffer_->allocator() : nullptr; }
  // Over bytes from Adopt (maybe not 64-byte aligned): read, never written in place.
  bool adopted() const { return buffer_ && buffer_->adopted(); }

  // "float32[2,3]"
  std::string SummaryString() const;
  // "float32[2,3] [1 2 3 4 5 6]", eliding after max_values.
  std::string DebugString(int max_values = 10) const;
  // Same dtype, shape and elements (NaN never equals NaN).
  bool Equals(const Tensor& other) const;

 private:
  void CheckDType(DType expected) const;
  // Checks and sets the dtype and the (fully defined) shape.
  void SetDTypeAndShape(DType dtype, Shape shape);

  DType dtype_ = DType::kInvalid;
  Shape shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<Buffer> buffer_;
};

// Reads an integer vector (int32 or int64, rank 0 or 1) as int64 values;
// used for shapes, axes and indices given as tensors.
std::vector<int64_t> ReadInt64s(const Tensor& t, std::string_view what);
// Reads one element of any numeric dtype as double.
double ReadAsDouble(const Tensor& t, int64_t index);

}  // namespace dflow

#include "graph/tensor.h"

#include <cmath>
#include <sstream>

namespace dflow {

Buffer::Buffer(Allocator* allocator, size_t bytes)
    : allocator_(allocator), bytes_(bytes), data_(allocator->Allocate(bytes)) {}

Buffer::Buffer(void* data, size_t bytes, std::function<void()> release)
    : allocator_(CpuAllocator()), bytes_(bytes), data_(data), release_(std::move(release)) {}

Buffer::~Buffer() {
  if (release_)
    release_();
  else
    allocator_->Deallocate(data_, bytes_);
}

Tensor::Tensor(DType dtype, Shape shape, Allocator* allocator) {
  SetDTypeAndShape(dtype, std::move(shape));
  CheckAllocationSize(TotalBytes(), [this] { return SummaryString(); });
  buffer_ = std::make_shared<Buffer>(allocator, TotalBytes());
}

Tensor Tensor::Adopt(DType dtype, Shape shape, void* data, std::function<void()> release) {
  DFLOW_REQUIRE(reinterpret_cast<uintptr_t>(data) % kMinAdoptedAlignment == 0, "Tensor::Adopt: ",
                "the bytes at ", data, " are not aligned to ", kMinAdoptedAlignment);
  Tensor t;
  t.SetDTypeAndShape(dtype, std::move(shape));
  t.buffer_ = std::make_shared<Buffer>(data, t.TotalBytes(), std::move(release));
  return t;
}

void Tensor::SetDTypeAndShape(DType dtype, Shape shape) {
  DFLOW_REQUIRE(dtype != DType::kInvalid, "cannot create a tensor of invalid dtype");
  DFLOW_REQUIRE(shape.IsFullyDefined(), "cannot create a tensor of partially known shape ",
                shape.ToString());
  CheckShapeSize(shape, static_cast<int64_t>(DTypeSize(dtype)));  // TotalBytes() cannot wrap
  dtype_ = dtype;
  shape_ = std::move(shape);
  num_elements_ = shape_.NumElements();
}

Tensor Tensor::Zeros(DType dtype, Shape shape, Allocator* allocator) {
  Tensor t(dtype, std::move(shape), allocator);
  std::memset(t.raw_data(), 0, t.TotalBytes());
  return t;
}

void Tensor::CheckDType(DType expected) const {
  if (dtype_ != expected)
    Fail(Code::kInternal, "tensor of dtype ", DTypeName(dtype_), " accessed as ",
         DTypeName(expected));
}

Tensor Tensor::Reshaped(Shape shape) const {
  DFLOW_REQUIRE(shape.IsFullyDefined() && shape.NumElements() == num_elements_,
                "cannot reshape a tensor of shape ", shape_.ToString(), " (", num_elements_,
                " elements) to ", shape.ToString());
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::Clone(Allocator* allocator) const {
  Tensor t(dtype_, shape_, allocator);
  Allocator* from = this->allocator();
  if (from == allocator) {
    allocator->CopyWithin(t.raw_data(), raw_data(), TotalBytes());
  } else {
    if ((from && !from->host_accessible()) || !allocator->host_accessible())
      Fail(Code::kInvalidArgument, "cannot clone ", SummaryString(), " from ",
           from ? from->name() : "nowhere", " to ", allocator->name(),
           ": copies between host and device memory go through the device");
    if (TotalBytes()) std::memcpy(t.raw_data(), raw_data(), TotalBytes());
  }
  return t;
}

namespace {

template <typename To, typename From>
To ConvertElement(From v) {
  if constexpr (std::is_same_v<From, Half>) {
    return ConvertElement<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, Half>) {
    return Half(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else {
    return static_cast<To>(v);
  }
}

#define DFLOW_ALL_TYPES float, double, Half, int8_t, uint8_t, int32_t, int64_t, bool

}  // namespace

Tensor Tensor::CastTo(DType dtype) const {
  if (dtype == dtype_) return Clone();
  Tensor out(dtype, shape_);
  Dispatch<DFLOW_ALL_TYPES>(dtype_, "Cast", [&]<typename From>() {
    Dispatch<DFLOW_ALL_TYPES>(dtype, "Cast", [&]<typename To>() {
      const From* src = data<From>();
      To* dst = out.data<To>();
      for (int64_t i = 0; i < num_elements_; ++i) dst[i] = ConvertElement<To>(src[i]);
    });
  });
  return out;
}

double ReadAsDouble(const Tensor& t, int64_t index) {
  return Dispatch<DFLOW_ALL_TYPES>(t.dtype(), "ReadAsDouble", [&]<typename T>() {
    return ConvertElement<double>(t.data<T>()[index]);
  });
}

std::vector<int64_t> ReadInt64s(const Tensor& t, std::string_view what) {
  DFLOW_REQUIRE(t.rank() <= 1, what, " must be a scalar or vector, got shape ",
                t.shape().ToString());
  DFLOW_REQUIRE(t.dtype() == DType::kInt32 || t.dtype() == DType::kInt64, what,
                " must be int32 or int64, got ", DTypeName(t.dtype()));
  std::vector<int64_t> values(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i)
    values[i] = t.dtype() == DType::kInt32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
  return values;
}

std::string Tensor::SummaryString() const {
  return StrCat(DTypeName(dtype_), shape_.ToString());
}

std::string Tensor::DebugString(int max_values) const {
  std::ostringstream out;
  out << SummaryString() << " [";
  int64_t n = std::min<int64_t>(num_elements_, max_values);
  for (int64_t i = 0; i < n; ++i) {
    if (i) out << ' ';
    if (dtype_ == DType::kBool) out << (data<bool>()[i] ? "true" : "false");
    else out << ReadAsDouble(*this, i);
  }
  if (n < num_elements_) out << " ...";
  out << ']';
  return out.str();
}

bool Tensor::Equals(const Tensor& other) const {
  if (dtype_ != other.dtype_ || !(shape_ == other.shape_)) return false;
  for (int64_t i = 0; i < num_elements_; ++i)
    if (ReadAsDouble(*this, i) != ReadAsDouble(other, i)) return false;
  return true;
}

}  // namespace dflow

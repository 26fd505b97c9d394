// 1-bit quantization with error feedback (Seide et al. 2014, as AdaLearner
// uses it, with scales per column or conv filter); see gradient_codec.h.
#include <cmath>
#include <cstring>

#include "dist/training/gradient_codec.h"

namespace dflow::dist {
namespace {

// Columns are the last dimension of a matrix or filter bank; a scalar or a
// vector (a bias) is one column.
int64_t ColumnsOf(const Shape& shape) {
  return shape.rank() >= 2 ? shape.dim(shape.rank() - 1) : 1;
}

}  // namespace

OneBitCodec::OneBitCodec(Shape shape)
    : GradientCodec(std::move(shape)),
      columns_(std::max<int64_t>(ColumnsOf(this->shape()), 1)),
      residual_(Tensor::Zeros(DType::kFloat32, this->shape())) {}

size_t OneBitCodec::EncodedBytes() const {
  auto elements = static_cast<size_t>(shape().NumElements());
  return 2 * static_cast<size_t>(columns_) * sizeof(float) + (elements + 7) / 8;
}

Bytes OneBitCodec::Encode(const Tensor& gradient) {
  CheckGradient(gradient);
  const int64_t n = gradient.NumElements();
  float* compensated = residual_.data<float>();  // becomes c, then c - decode(c)
  const float* g = gradient.data<float>();
  // A NaN or infinity would stay in the residual and poison every later step.
  for (int64_t i = 0; i < n; ++i)
    DFLOW_REQUIRE(std::isfinite(g[i]), "1-bit codec: gradient element ", i, " of ",
                  shape().ToString(), " is ", g[i], "; only finite gradients can be quantized");
  std::vector<double> positive_sum(columns_), negative_sum(columns_);
  std::vector<int64_t> positive_count(columns_), negative_count(columns_);
  for (int64_t i = 0; i < n; ++i) {
    compensated[i] += g[i];
    int64_t column = i % columns_;
    if (compensated[i] >= 0) {
      positive_sum[column] += compensated[i], ++positive_count[column];
    } else {
      negative_sum[column] += compensated[i], ++negative_count[column];
    }
  }
  Bytes bytes(EncodedBytes(), 0);
  auto* positive_scale = reinterpret_cast<float*>(bytes.data());
  float* negative_scale = positive_scale + columns_;
  uint8_t* bits = bytes.data() + 2 * columns_ * sizeof(float);
  auto mean = [](double sum, int64_t count) {
    return count ? static_cast<float>(sum / static_cast<double>(count)) : 0.0f;
  };
  for (int64_t c = 0; c < columns_; ++c) {
    positive_scale[c] = mean(positive_sum[c], positive_count[c]);
    negative_scale[c] = mean(negative_sum[c], negative_count[c]);
  }
  for (int64_t i = 0; i < n; ++i) {
    bool non_negative = compensated[i] >= 0;
    if (non_negative) bits[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
    int64_t column = i % columns_;
    compensated[i] -= non_negative ? positive_scale[column] : negative_scale[column];
  }
  return bytes;
}

Tensor OneBitCodec::Decode(const Bytes& bytes) const {
  CheckLength(bytes, EncodedBytes());
  Tensor out(DType::kFloat32, shape());
  std::vector<float> scales(2 * columns_);
  std::memcpy(scales.data(), bytes.data(), scales.size() * sizeof(float));
  const uint8_t* bits = bytes.data() + scales.size() * sizeof(float);
  float* values = out.data<float>();
  for (int64_t i = 0; i < out.NumElements(); ++i) {
    bool non_negative = (bits[i / 8] >> (i % 8)) & 1;
    values[i] = scales[(non_negative ? 0 : columns_) + i % columns_];
  }
  return out;
}

}  // namespace dflow::dist

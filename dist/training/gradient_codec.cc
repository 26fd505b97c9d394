#include "dist/training/gradient_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace dflow::dist {
namespace {

// Raw float32 bytes: the baseline the other codecs are measured against.
class IdentityCodec final : public GradientCodec {
 public:
  explicit IdentityCodec(Shape shape) : GradientCodec(std::move(shape)) {}
  Bytes Encode(const Tensor& gradient) override {
    CheckGradient(gradient);
    const auto* begin = static_cast<const uint8_t*>(gradient.raw_data());
    return Bytes(begin, begin + gradient.TotalBytes());
  }
  Tensor Decode(const Bytes& bytes) const override {
    Tensor out(DType::kFloat32, shape());
    CheckLength(bytes, out.TotalBytes());
    if (!bytes.empty()) std::memcpy(out.raw_data(), bytes.data(), bytes.size());
    return out;
  }
};

class Float16Codec final : public GradientCodec {
 public:
  explicit Float16Codec(Shape shape) : GradientCodec(std::move(shape)) {}
  Bytes Encode(const Tensor& gradient) override {
    CheckGradient(gradient);
    return EncodeFloat16(gradient);
  }
  Tensor Decode(const Bytes& bytes) const override {
    CheckLength(bytes, static_cast<size_t>(shape().NumElements()) * sizeof(uint16_t));
    return DecodeFloat16(bytes, shape());
  }
};

}  // namespace

CodecKind ParseCodecKind(std::string_view name) {
  if (name == "none") return CodecKind::kNone;
  if (name == "fp16") return CodecKind::kFloat16;
  if (name == "1bit") return CodecKind::kOneBit;
  Fail(Code::kInvalidArgument, "unknown gradient codec '", name,
       "' (expected none, fp16 or 1bit)");
}

std::string_view CodecName(CodecKind kind) {
  switch (kind) {
    case CodecKind::kNone: return "none";
    case CodecKind::kFloat16: return "fp16";
    case CodecKind::kOneBit: return "1bit";
  }
  return "?";
}

GradientCodec::GradientCodec(Shape shape) : shape_(std::move(shape)) {
  DFLOW_REQUIRE(shape_.IsFullyDefined(), "gradient codec: the shape must be fully defined, got ",
                shape_.ToString());
}

void GradientCodec::CheckGradient(const Tensor& gradient) const {
  DFLOW_REQUIRE(gradient.dtype() == DType::kFloat32 && gradient.shape() == shape_,
                "gradient codec: expected a float32", shape_.ToString(), " gradient, got ",
                gradient.SummaryString());
}

void GradientCodec::CheckLength(const Bytes& bytes, size_t expected) const {
  DFLOW_REQUIRE(bytes.size() == expected, "gradient codec: ", bytes.size(),
                " encoded bytes do not fit a gradient of shape ", shape_.ToString(), " (expected ",
                expected, ")");
}

std::unique_ptr<GradientCodec> MakeGradientCodec(CodecKind kind, Shape shape) {
  switch (kind) {
    case CodecKind::kNone: return std::make_unique<IdentityCodec>(std::move(shape));
    case CodecKind::kFloat16: return std::make_unique<Float16Codec>(std::move(shape));
    case CodecKind::kOneBit: return std::make_unique<OneBitCodec>(std::move(shape));
  }
  Fail(Code::kInvalidArgument, "unknown gradient codec kind ", static_cast<int>(kind));
}

Bytes EncodeFloat16(const Tensor& gradient) {
  DFLOW_REQUIRE(gradient.dtype() == DType::kFloat32, "EncodeFloat16: expected float32, got ",
                gradient.SummaryString());
  constexpr float kMaxHalf = 65504.0f;
  Bytes bytes(static_cast<size_t>(gradient.NumElements()) * sizeof(uint16_t));
  const float* in = gradient.data<float>();
  for (int64_t i = 0; i < gradient.NumElements(); ++i) {
    float value = std::isnan(in[i]) ? in[i] : std::clamp(in[i], -kMaxHalf, kMaxHalf);
    uint16_t bits = Half(value).bits;
    std::memcpy(bytes.data() + 2 * i, &bits, sizeof(bits));
  }
  return bytes;
}

Tensor DecodeFloat16(const Bytes& bytes, const Shape& shape) {
  Tensor out(DType::kFloat32, shape);
  DFLOW_REQUIRE(bytes.size() == static_cast<size_t>(out.NumElements()) * sizeof(uint16_t),
                "DecodeFloat16: ", bytes.size(), " bytes do not hold ", shape.ToString(),
                " float16 values");
  float* values = out.data<float>();
  for (int64_t i = 0; i < out.NumElements(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, bytes.data() + 2 * i, sizeof(bits));
    values[i] = static_cast<float>(Half::FromBits(bits));
  }
  return out;
}

}  // namespace dflow::dist

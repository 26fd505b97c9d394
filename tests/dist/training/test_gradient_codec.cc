// Gradient codecs: fp16 round trip bounds and saturation, 1-bit quantization
// (signs, per-column scales that keep each column's sum, a residual that
// carries the error into the next step), and their errors on bad input.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "dist/training/gradient_codec.h"

namespace dflow {
namespace {

using Catch::Contains;
using dist::CodecKind;

TEST_CASE("codec names", "[codecs]") {
  CHECK(dist::ParseCodecKind("none") == CodecKind::kNone);
  CHECK(dist::ParseCodecKind("fp16") == CodecKind::kFloat16);
  CHECK(dist::ParseCodecKind("1bit") == CodecKind::kOneBit);
  CHECK(dist::CodecName(CodecKind::kOneBit) == "1bit");
  CHECK_THROWS_WITH(dist::ParseCodecKind("2bit"),
                    Contains("unknown gradient codec '2bit' (expected none, fp16 or 1bit)"));
}

TEST_CASE("fp16 round trip is within half a unit in the last place", "[codecs]") {
  std::vector<float> values;
  for (float v = 6.2e-5f; v < 65000.0f; v *= 1.37f) values.insert(values.end(), {v, -v * 1.01f});
  Tensor g = Tensor::FromVector<float>(values);
  auto codec = dist::MakeGradientCodec(CodecKind::kFloat16, g.shape());
  dist::Bytes wire = codec->Encode(g);
  CHECK(wire.size() == 2 * values.size());
  Tensor back = codec->Decode(wire);
  for (size_t i = 0; i < values.size(); ++i) {
    INFO(values[i]);
    CHECK(std::abs(back.data<float>()[i] - values[i]) <= std::abs(values[i]) * 0x1p-11f);
  }
}

TEST_CASE("fp16 saturates out-of-range values and keeps NaN", "[codecs]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor g = Tensor::FromVector<float>({1e6f, -1e9f, nan, 0.0f}, Shape{2, 2});
  Tensor back = dist::DecodeFloat16(dist::EncodeFloat16(g), g.shape());
  CHECK(back.data<float>()[0] == 65504.0f);
  CHECK(back.data<float>()[1] == -65504.0f);
  CHECK(std::isnan(back.data<float>()[2]));
  CHECK(back.data<float>()[3] == 0.0f);
}

TEST_CASE("1-bit keeps signs and each column's sum; the residual holds the error", "[codecs]") {
  // 3 rows x 2 columns: column 0 = {1, -2, 4}, column 1 = {-1, -3, 0.5}
  Tensor g = Tensor::FromVector<float>({1, -1, -2, -3, 4, 0.5f}, Shape{3, 2});
  dist::OneBitCodec codec(g.shape());
  dist::Bytes wire = codec.Encode(g);
  CHECK(wire.size() == codec.EncodedBytes());
  CHECK(wire.size() == 2 * 2 * 4 + 1);
  Tensor decoded = codec.Decode(wire);
  // positive mean of column 0 = 2.5, negative mean -2; column 1: 0.5 and -2
  CHECK(decoded.ToVector<float>() == std::vector<float>{2.5f, -2, -2, -2, 2.5f, 0.5f});
  for (int64_t i = 0; i < 6; ++i)
    CHECK(codec.residual().data<float>()[i] == g.data<float>()[i] - decoded.data<float>()[i]);
  for (int column = 0; column < 2; ++column) {
    float decoded_sum = 0, g_sum = 0;
    for (int row = 0; row < 3; ++row)
      decoded_sum += decoded.data<float>()[row * 2 + column], g_sum += g.data<float>()[row * 2 + column];
    CHECK(decoded_sum == Approx(g_sum));
  }
}

TEST_CASE("1-bit error feedback: over many steps the decoded mean reaches the gradient", "[codecs]") {
  // A conv filter bank [kh=3, kw=1, cin=2, cout=4]: one scale pair per filter.
  std::vector<float> values(24);
  for (int i = 0; i < 24; ++i) values[i] = std::sin(1.7f * i) * (1 + i % 5);
  Tensor g = Tensor::FromVector<float>(values, Shape{3, 1, 2, 4});
  dist::OneBitCodec codec(g.shape());
  CHECK(codec.columns() == 4);
  const int steps = 400;
  std::vector<double> decoded_sum(24, 0.0);
  float largest_residual = 0;
  for (int step = 0; step < steps; ++step) {
    Tensor decoded = codec.Decode(codec.Encode(g));
    for (int i = 0; i < 24; ++i) decoded_sum[i] += decoded.data<float>()[i];
    for (float r : codec.residual().ToVector<float>()) largest_residual = std::max(largest_residual, std::abs(r));
  }
  CHECK(largest_residual < 20);  // the error is carried, it does not pile up
  for (int i = 0; i < 24; ++i) {
    INFO("element " << i);
    // sum of decoded = steps * g - final residual, up to float rounding
    CHECK(decoded_sum[i] == Approx(steps * values[i] - codec.residual().data<float>()[i]).margin(1e-2));
    CHECK(decoded_sum[i] / steps == Approx(values[i]).margin(0.05));
  }
}

TEST_CASE("a bias is one column; without the residual one step would be lossy", "[codecs]") {
  Tensor g = Tensor::FromVector<float>({0.1f, 0.3f, -0.2f});
  dist::OneBitCodec codec(g.shape());
  CHECK(codec.columns() == 1);
  Tensor first = codec.Decode(codec.Encode(g));
  CHECK(first.ToVector<float>() == std::vector<float>{0.2f, 0.2f, -0.2f});
  CHECK(codec.residual().ToVector<float>()[0] == Approx(-0.1f));
  Tensor second = codec.Decode(codec.Encode(g));
  // c = {0, 0.4, -0.2}: the carried error moves the next step's values
  CHECK(second.ToVector<float>()[0] == Approx(0.2f));
  CHECK(second.ToVector<float>()[1] == Approx(0.2f));
}

TEST_CASE("codecs reject gradients and bytes that do not fit", "[codecs]") {
  for (CodecKind kind : {CodecKind::kNone, CodecKind::kFloat16, CodecKind::kOneBit}) {
    auto codec = dist::MakeGradientCodec(kind, Shape{2, 3});
    INFO(dist::CodecName(kind));
    CHECK_THROWS_WITH(codec->Encode(Tensor::Zeros(DType::kFloat32, Shape{3, 2})),
                      Contains("expected a float32[2,3] gradient, got float32[3,2]"));
    CHECK_THROWS_WITH(codec->Encode(Tensor::Zeros(DType::kFloat64, Shape{2, 3})),
                      Contains("got float64[2,3]"));
    CHECK_THROWS_WITH(codec->Decode(dist::Bytes(5)),
                      Contains("5 encoded bytes do not fit a gradient of shape [2,3]"));
    Tensor ok = Tensor::Zeros(DType::kFloat32, Shape{2, 3});
    CHECK(codec->Decode(codec->Encode(ok)).Equals(ok));
  }
  CHECK_THROWS_WITH(dist::MakeGradientCodec(CodecKind::kOneBit, Shape{-1, 3}),
                    Contains("the shape must be fully defined, got [?,3]"));
  dist::OneBitCodec codec(Shape{2});
  Tensor bad = Tensor::FromVector<float>({1, std::numeric_limits<float>::infinity()});
  CHECK_THROWS_WITH(codec.Encode(bad), Contains("gradient element 1 of [2] is inf"));
  CHECK(codec.residual().ToVector<float>() == std::vector<float>{0, 0});
}

}  // namespace
}  // namespace dflow

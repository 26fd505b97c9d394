// QuantizeV2 and Dequantize: MIN_FIRST and SCALED by TensorFlow's formulas
// (worked examples from its documentation), per-channel SCALED, round trips
// within half a step with 0.0 exact, and bad ranges and attrs named.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

Tensor F(std::vector<float> v, Shape shape) { return Tensor::FromVector(v, std::move(shape)); }
Tensor F(std::vector<float> v) { return Tensor::FromVector(v); }
Tensor Scalar(float v) { return Tensor::Scalar(v); }

std::vector<Tensor> Quantize(Tensor x, Tensor lo, Tensor hi, DType dtype, AttrMap attrs) {
  attrs["T"] = dtype;
  return RunOp({.op = "QuantizeV2", .inputs = {std::move(x), std::move(lo), std::move(hi)}, .attrs = attrs});
}

Tensor Dequantize(Tensor q, Tensor lo, Tensor hi, AttrMap attrs) {
  return RunOp1({.op = "Dequantize", .inputs = {std::move(q), std::move(lo), std::move(hi)}, .attrs = attrs});
}

}  // namespace

TEST_CASE("QuantizeV2 SCALED: TensorFlow's example range [-10, 9] in int8", "[quant]") {
  // f = min(-128 / -10, 127 / 9) = 12.8: min stays -10, max becomes 127 / 12.8.
  auto out = Quantize(F({-10, -0.04f, 0, 0.04f, 1, 9.921875f, 20}), Scalar(-10), Scalar(9), DType::kInt8,
                      {{"mode", std::string("SCALED")}, {"ensure_minimum_range", 0.0}});
  CHECK(out[0].ToVector<int8_t>() == std::vector<int8_t>{-128, -1, 0, 1, 13, 127, 127});
  CHECK(out[1].scalar<float>() == -10.0f);
  CHECK(out[2].scalar<float>() == 9.921875f);
  // narrow_range: -127 is the lowest code, f = min(-127 / -10, 127 / 9) = 12.7.
  auto narrow = Quantize(F({-10, 10}), Scalar(-10), Scalar(9), DType::kInt8,
                         {{"mode", std::string("SCALED")}, {"narrow_range", true}, {"ensure_minimum_range", 0.0}});
  CHECK(narrow[0].ToVector<int8_t>() == std::vector<int8_t>{-127, 127});
  CHECK(narrow[2].scalar<float>() == Approx(10.0f));
  // HALF_TO_EVEN: 0.5 and 1.5 steps go to 0 and 2.
  auto even = Quantize(F({0.5f / 12.8f, 1.5f / 12.8f}), Scalar(-10), Scalar(9), DType::kInt8,
                       {{"mode", std::string("SCALED")}, {"round_mode", std::string("HALF_TO_EVEN")},
                        {"ensure_minimum_range", 0.0}});
  CHECK(even[0].ToVector<int8_t>() == std::vector<int8_t>{0, 2});
}

TEST_CASE("QuantizeV2 MIN_FIRST in uint8: the zero point codes 0.0 exactly", "[quant]") {
  // [-1, 3]: the step is 4 / 255, round(-1 * 255 / 4) = -64, so 0.0 is code 64.
  auto out = Quantize(F({-2, -1, 0, 4.0f / 255, 1, 3, 5}), Scalar(-1), Scalar(3), DType::kUInt8,
                      {{"ensure_minimum_range", 0.0}});
  CHECK(out[0].ToVector<uint8_t>() == std::vector<uint8_t>{0, 0, 64, 65, 128, 255, 255});
  Tensor back = Dequantize(out[0], out[1], out[2], {});
  CHECK(back.data<float>()[2] == 0.0f);
  CHECK(back.data<float>()[1] == Approx(-1.0f).margin(2.0 / 255));
  // A range above 0 is widened to hold it; a tiny one to ensure_minimum_range.
  auto positive = Quantize(F({0, 6}), Scalar(2), Scalar(6), DType::kUInt8, {});
  CHECK(positive[1].scalar<float>() == 0.0f);
  CHECK(positive[0].ToVector<uint8_t>() == std::vector<uint8_t>{0, 255});
  auto tiny = Quantize(F({0}), Scalar(0), Scalar(0), DType::kUInt8, {});
  CHECK(tiny[2].scalar<float>() == Approx(0.01f));
}

TEST_CASE("QuantizeV2 and Dequantize round-trip within half a step, per tensor and per channel", "[quant]") {
  Tensor x = RandomTensor(DType::kFloat32, {4, 3, 5}, 11, -3, 2);
  for (DType dtype : {DType::kInt8, DType::kUInt8}) {
    INFO(DTypeName(dtype));
    auto q = Quantize(x, Scalar(-3), Scalar(2), dtype, {});
    Tensor back = Dequantize(q[0], q[1], q[2], {});
    ExpectClose(back, x, 0, 5.0 / 255 / 2 + 1e-6);
  }
  // SCALED per channel along axis 1: each channel's own scale.
  Tensor lo = F({-3, -1, -0.5f}), hi = F({2, 1, 0.25f});
  Tensor y = RandomTensor(DType::kFloat32, {4, 3, 5}, 12, -0.5, 0.25);
  auto q = Quantize(y, lo, hi, DType::kInt8, {{"mode", std::string("SCALED")}, {"axis", int64_t{1}},
                                               {"ensure_minimum_range", 0.0}});
  CHECK(q[1].shape() == Shape{3});
  Tensor back = Dequantize(q[0], q[1], q[2], {{"mode", std::string("SCALED")}, {"axis", int64_t{1}}});
  ExpectClose(back, y, 0, 3.0 / 128 / 2 + 1e-6);  // the widest channel's half step bounds them all
  // Channel 2 (range [-0.5, 0.25], f = 256) uses its own, finer step.
  for (int64_t o = 0; o < 4; ++o)
    for (int64_t i = 0; i < 5; ++i) {
      const int64_t at = (o * 3 + 2) * 5 + i;
      CHECK(std::fabs(back.data<float>()[at] - y.data<float>()[at]) <= 0.5 / 256 + 1e-6);
    }
}

TEST_CASE("QuantizeV2 rounds ties as round_mode says; huge values clamp, NaN is the lowest code", "[quant]") {
  const AttrMap scaled = {{"mode", std::string("SCALED")}, {"ensure_minimum_range", 0.0}, {"narrow_range", true}};
  const Tensor ties = F({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, 1e30f, -1e30f});
  auto away = Quantize(ties, Scalar(-127), Scalar(127), DType::kInt8, scaled);
  CHECK(away[0].ToVector<int8_t>() == std::vector<int8_t>{1, 2, 3, -1, -2, -3, 127, 127, -127});
  AttrMap even_attrs = scaled;
  even_attrs["round_mode"] = std::string("HALF_TO_EVEN");
  auto even = Quantize(ties, Scalar(-127), Scalar(127), DType::kInt8, even_attrs);
  CHECK(even[0].ToVector<int8_t>() == std::vector<int8_t>{0, 2, 2, 0, -2, -2, 126, 127, -127});
  auto min_first = Quantize(F({NAN, 1e30f, -1e30f, 0}), Scalar(-1), Scalar(1), DType::kUInt8, {});
  const std::vector<uint8_t> codes = min_first[0].ToVector<uint8_t>();
  CHECK(codes[0] == 0);
  CHECK(codes[1] == 255);
  CHECK(codes[2] == 0);
  // 0.0 codes to the zero point Dequantize reads, here where min / step = -127.5 is a tie.
  CHECK(Dequantize(min_first[0], min_first[1], min_first[2], {}).data<float>()[3] == 0.0f);
}

TEST_CASE("QuantizeV2 and Dequantize name bad ranges and attrs", "[quant]") {
  ExpectError([] { Quantize(F({1}), Scalar(2), Scalar(1), DType::kInt8, {}); }, Code::kInvalidArgument,
              "min_range <= max_range, got [2, 1]");
  ExpectError([] { Quantize(F({1}), Scalar(NAN), Scalar(1), DType::kInt8, {}); }, Code::kInvalidArgument,
              "must be finite");
  ExpectError([] { Quantize(F({1}), Scalar(0), Scalar(1), DType::kInt8, {{"mode", std::string("MIN_COMBINED")}}); },
              Code::kInvalidArgument, "MIN_COMBINED is not supported");
  ExpectError([] { Quantize(F({1, 2}, {1, 2}), F({0, 0}), F({1, 1}), DType::kInt8, {{"axis", int64_t{1}}}); },
              Code::kInvalidArgument, "axis (a range per slice) needs mode SCALED");
  ExpectError(
      [] {
        Quantize(F({1, 2}, {1, 2}), F({0, 0, 0}), F({1, 1, 1}), DType::kInt8,
                 {{"mode", std::string("SCALED")}, {"axis", int64_t{1}}});
      },
      Code::kInvalidArgument, "must be a vector of input's dim 1 (2 entries)");
  ExpectError([] { Quantize(F({1}), Scalar(0), Scalar(1), DType::kInt8, {{"round_mode", std::string("HALF_TO_EVEN")}}); },
              Code::kInvalidArgument, "HALF_TO_EVEN needs mode SCALED");
  ExpectError([] { Quantize(F({1}), Scalar(0), Scalar(1), DType::kInt32, {}); }, Code::kInvalidArgument, "int32");
}

namespace {

// The op's arithmetic, written out: MIN_FIRST a, SCALED b per column, exact
// integer sums, bias, MIN_FIRST output codes: acc sa sb / so + bias / so +
// zo, clamped, before the rounding.
std::vector<double> ReferenceQuantizedMatMul(const std::vector<uint8_t>& a, const std::vector<int8_t>& b_kn,
                                              const std::vector<float>& bias, int64_t m, int64_t k, int64_t n,
                                              float min_a, float max_a, const std::vector<float>& min_b,
                                              const std::vector<float>& max_b, float min_o, float max_o) {
  const double sa = (double{max_a} - min_a) / 255, za = -std::round(min_a / sa);
  const double so = (double{max_o} - min_o) / 255, zo = -std::round(min_o / so);
  std::vector<double> out(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += (a[i * k + p] - static_cast<int64_t>(za)) * b_kn[p * n + j];
      const double sb = std::max(min_b[j] / -128.0, max_b[j] / 127.0);
      const double v = static_cast<double>(acc) * (sa * sb / so) + (bias[j] / so + zo);
      out[i * n + j] = std::clamp(v, 0.0, 255.0);
    }
  return out;
}

}  // namespace

TEST_CASE("QuantizedMatMulWithBiasAndRequantize: exact to its arithmetic, near the float layer", "[quant]") {
  const int64_t m = 37, k = 70, n = 19;
  std::mt19937 rng(5);
  std::vector<uint8_t> a(m * k);
  std::vector<int8_t> b_kn(k * n), b_nk(n * k);
  std::vector<float> bias(n), min_b(n), max_b(n);
  for (uint8_t& v : a) v = static_cast<uint8_t>(rng());
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) b_nk[j * k + p] = b_kn[p * n + j] = static_cast<int8_t>(rng());
  for (int64_t j = 0; j < n; ++j) {
    bias[j] = static_cast<float>(static_cast<int>(rng() % 200) - 100) / 50.0f;
    max_b[j] = 0.05f + static_cast<float>(rng() % 100) / 400.0f;
    min_b[j] = -max_b[j] * 128 / 127;
  }
  const float min_a = -1, max_a = 3, min_o = -20, max_o = 30;
  std::vector<double> expected =
      ReferenceQuantizedMatMul(a, b_kn, bias, m, k, n, min_a, max_a, min_b, max_b, min_o, max_o);
  for (bool transpose_b : {false, true}) {
    INFO("transpose_b=" << transpose_b);
    auto out = RunOp({.op = "QuantizedMatMulWithBiasAndRequantize",
                      .inputs = {Tensor::FromVector(a, {m, k}),
                                 transpose_b ? Tensor::FromVector(b_nk, {n, k}) : Tensor::FromVector(b_kn, {k, n}),
                                 Tensor::FromVector(bias), Scalar(min_a), Scalar(max_a), Tensor::FromVector(min_b),
                                 Tensor::FromVector(max_b), Scalar(min_o), Scalar(max_o)},
                      .attrs = {{"transpose_b", transpose_b}}});
    ExpectRequantized(out[0], expected);
    CHECK(out[1].scalar<float>() == min_o);
    // The float layer on the dequantized operands lands within one output code.
    Tensor back = Dequantize(out[0], out[1], out[2], {});
    const double sa = 4.0 / 255, za = -std::round(-1 / sa), so = 50.0 / 255;
    for (int64_t i = 0; i < m; i += 7)
      for (int64_t j = 0; j < n; ++j) {
        double y = bias[j];
        const double sb = std::max(min_b[j] / -128.0, max_b[j] / 127.0);
        for (int64_t p = 0; p < k; ++p) y += (a[i * k + p] - za) * sa * (b_kn[p * n + j] * sb);
        if (y > min_o && y < max_o) CHECK(std::fabs(back.data<float>()[i * n + j] - y) <= so * 1.01);
      }
  }
}

TEST_CASE("QuantizedMatMulWithBiasAndRequantize names what it cannot take", "[quant]") {
  auto run = [](AttrMap attrs, Tensor bias, float min_o, float max_o) {
    return RunOp({.op = "QuantizedMatMulWithBiasAndRequantize",
                  .inputs = {Tensor::Zeros(DType::kUInt8, {2, 3}), Tensor::Zeros(DType::kInt8, {3, 4}), std::move(bias),
                             Scalar(0), Scalar(1), Scalar(-1), Scalar(1), Scalar(min_o), Scalar(max_o)},
                  .attrs = std::move(attrs)});
  };
  ExpectError([&] { run({{"transpose_a", true}}, F({0, 0, 0, 0}), 0, 1); }, Code::kInvalidArgument,
              "transpose_a is not supported");
  ExpectError([&] { run({}, F({0, 0, 0}), 0, 1); }, Code::kInvalidArgument, "bias must be a vector of 4");
  ExpectError([&] { run({}, F({0, 0, 0, 0}), 1, 1); }, Code::kInvalidArgument,
              "the range of the output must have min < max, got [1, 1]");
}

TEST_CASE("QuantizedAdd[AndRelu]AndRequantize: the codes of the sum, within one step of the float one", "[quant]") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> ux(-1.5f, 2.0f), uy(-0.3f, 0.9f);
  std::vector<float> xs(300), ys(300);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = ux(rng), ys[i] = uy(rng);
  auto qx = Quantize(F(xs, {3, 10, 10}), Scalar(-1.5f), Scalar(2.0f), DType::kUInt8, {});
  auto qy = Quantize(F(ys, {3, 10, 10}), Scalar(-0.3f), Scalar(0.9f), DType::kUInt8, {});
  for (bool relu : {false, true}) {
    const float out_min = -1.0f, out_max = 2.5f;  // the sum spans -1.8 .. 2.9: both ends clamp
    auto z = RunOp({.op = relu ? "QuantizedAddAndReluAndRequantize" : "QuantizedAddAndRequantize",
                    .inputs = {qx[0], qy[0], qx[1], qx[2], qy[1], qy[2], Scalar(out_min), Scalar(out_max)}});
    CHECK(z[1].scalar<float>() == out_min);
    CHECK(z[2].scalar<float>() == out_max);
    const Tensor got = Dequantize(z[0], z[1], z[2], {});
    const Tensor dx = Dequantize(qx[0], qx[1], qx[2], {}), dy = Dequantize(qy[0], qy[1], qy[2], {});
    const float step = (out_max - out_min) / 255;
    for (int64_t i = 0; i < got.NumElements(); ++i) {
      float want = std::clamp(dx.data<float>()[i] + dy.data<float>()[i], out_min, out_max);
      if (relu) want = std::max(want, 0.0f);
      INFO("element " << i << (relu ? " (relu)" : ""));
      CHECK(std::fabs(got.data<float>()[i] - want) <= 0.5f * step + 1e-5f);
    }
  }
  ExpectError([&] {
    RunOp({.op = "QuantizedAddAndRequantize",
           .inputs = {qx[0], Tensor::Zeros(DType::kUInt8, {3, 10, 9}), qx[1], qx[2], qy[1], qy[2], Scalar(0), Scalar(1)}});
  }, Code::kInvalidArgument, "x and y must have one shape");
  ExpectError([&] {
    RunOp({.op = "QuantizedAddAndRequantize",
           .inputs = {qx[0], qy[0], qx[1], qx[2], qy[1], qy[2], Scalar(1), Scalar(1)}});
  }, Code::kInvalidArgument, "the range of the output must have min < max");
}

TEST_CASE("QuantizedRelu: codes below the zero point become it, in the same range", "[quant]") {
  auto q = Quantize(F({-1, -0.2f, 0, 0.3f, 3}), Scalar(-1), Scalar(3), DType::kUInt8, {});
  auto r = RunOp({.op = "QuantizedRelu", .inputs = {q[0], q[1], q[2]}});
  CHECK(r[1].scalar<float>() == q[1].scalar<float>());
  CHECK(r[2].scalar<float>() == q[2].scalar<float>());
  const Tensor got = Dequantize(r[0], r[1], r[2], {});
  const Tensor before = Dequantize(q[0], q[1], q[2], {});
  for (int64_t i = 0; i < got.NumElements(); ++i) CHECK(got.data<float>()[i] == std::max(before.data<float>()[i], 0.0f));
}

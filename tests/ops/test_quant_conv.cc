// The fused int8 convolutions (ops/quant_conv.cc, kernels
// ops/cpu/quantized_conv.cc): exact to their arithmetic written out as loops
// (the integer sums exactly, their float requantization up to ties, and the
// ...AndDequantize ops' float outputs)
// (dense with padding, strides and dilation, pointwise, grouped, depthwise
// with multipliers 1 and 2, ReLU), on every instruction set the machine has;
// within one output code of the float convolution of the dequantized
// operands; and bad shapes and ranges named.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "graph/session.h"
#include "ops/state.h"
#include "ops/conv.h"
#include "ops/quant.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

Tensor ScalarOf(float v) { return Tensor::Scalar(v); }

struct QuantConvCase {
  Shape input;   // [N, H, W, C]
  Shape filter;  // as the op takes it: [KH, KW, C / groups, O], or [KH, KW, C, M] depthwise
  std::vector<int64_t> strides = {1, 1, 1, 1}, dilations = {1, 1, 1, 1};
  std::string padding = "SAME";
  bool depthwise = false, relu = false;
  bool per_channel = true;  // filter ranges per output channel, else one
};

// `output`: "Requantize" (uint8 codes) or "Dequantize" (float32).
std::string OpName(const QuantConvCase& c, const char* output = "Requantize") {
  return StrCat("Quantized", c.depthwise ? "DepthwiseConv2D" : "Conv2D", "WithBias", c.relu ? "AndRelu" : "", "And",
                output);
}

// The grouped-Conv2D form of the filter (depthwise [KH, KW, C, M] is [KH, KW, 1, C * M]).
Shape GroupedFilter(const QuantConvCase& c) {
  if (!c.depthwise) return c.filter;
  return Shape{c.filter.dim(0), c.filter.dim(1), 1, c.filter.dim(2) * c.filter.dim(3)};
}

struct ConvOperands {
  std::vector<uint8_t> x;
  std::vector<int8_t> w;
  std::vector<float> bias, min_w, max_w;
  float min_x = -1, max_x = 3, min_o = -12, max_o = 20;
};

ConvOperands MakeOperands(const QuantConvCase& c, int64_t out_c, uint32_t seed) {
  std::mt19937 rng(seed);
  ConvOperands o;
  o.x.resize(c.input.NumElements());
  o.w.resize(c.filter.NumElements());
  for (uint8_t& v : o.x) v = static_cast<uint8_t>(rng());
  for (int8_t& v : o.w) v = static_cast<int8_t>(rng());
  for (int64_t j = 0; j < out_c; ++j) {
    o.bias.push_back(static_cast<float>(static_cast<int>(rng() % 200) - 100) / 40.0f);
    o.max_w.push_back(0.01f + static_cast<float>(rng() % 100) / 2000.0f);
    o.min_w.push_back(-o.max_w.back() * 128 / 127);
  }
  if (!c.per_channel) {
    o.min_w.resize(1);
    o.max_w.resize(1);
  }
  return o;
}

double FilterStep(const ConvOperands& o, int64_t channel) {
  const size_t at = o.max_w.size() == 1 ? 0 : channel;
  return std::max(o.min_w[at] / -128.0, o.max_w[at] / 127.0);
}

// The int32 sum of each output, by the op's definition: (code - zero point)
// times the filter over the window, the padding counting as the zero point.
std::vector<int64_t> ReferenceSums(const ConvGeometry& g, const ConvOperands& o, int64_t zero) {
  std::vector<int64_t> sums(g.batch * g.out_h * g.out_w * g.out_c);
  const int64_t og = g.group_out_c();
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        for (int64_t oc = 0; oc < g.out_c; ++oc) {
          int64_t acc = 0;
          for (int64_t kh = 0; kh < g.k_h; ++kh)
            for (int64_t kw = 0; kw < g.k_w; ++kw)
              for (int64_t c = 0; c < g.filter_c; ++c) {
                const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
                const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
                const int64_t ic = oc / og * g.filter_c + c;
                const bool inside = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w;
                const int64_t code = inside ? o.x[((n * g.in_h + ih) * g.in_w + iw) * g.in_c + ic] : zero;
                acc += (code - zero) * o.w[((kh * g.k_w + kw) * g.filter_c + c) * g.out_c + oc];
              }
          sums[((n * g.out_h + oh) * g.out_w + ow) * g.out_c + oc] = acc;
        }
  return sums;
}

std::vector<Tensor> RunQuantizedConv(const QuantConvCase& c, const ConvOperands& o) {
  return RunOp({.op = OpName(c),
                .inputs = {Tensor::FromVector(o.x, c.input), Tensor::FromVector(o.w, c.filter),
                           Tensor::FromVector(o.bias), ScalarOf(o.min_x), ScalarOf(o.max_x),
                           Tensor::FromVector(o.min_w), Tensor::FromVector(o.max_w), ScalarOf(o.min_o),
                           ScalarOf(o.max_o)},
                .attrs = {{"strides", c.strides}, {"dilations", c.dilations}, {"padding", c.padding}}});
}

Tensor RunDequantizedConv(const QuantConvCase& c, const ConvOperands& o) {
  return RunOp1({.op = OpName(c, "Dequantize"),
                 .inputs = {Tensor::FromVector(o.x, c.input), Tensor::FromVector(o.w, c.filter),
                            Tensor::FromVector(o.bias), ScalarOf(o.min_x), ScalarOf(o.max_x),
                            Tensor::FromVector(o.min_w), Tensor::FromVector(o.max_w)},
                 .attrs = {{"strides", c.strides}, {"dilations", c.dilations}, {"padding", c.padding}}});
}

// ...AndDequantize: the same exact sums, as float32 acc si sw + bias (ReLU).
void CheckDequantized(const QuantConvCase& c, const ConvGeometry& g, const ConvOperands& o,
                      const std::vector<int64_t>& sums, double sx) {
  ForEachCpuIsa([&] {
    Tensor y = RunDequantizedConv(c, o);
    REQUIRE(y.dtype() == DType::kFloat32);
    REQUIRE(y.shape() == g.output_shape());
    for (size_t i = 0; i < sums.size(); ++i) {
      const int64_t oc = static_cast<int64_t>(i) % g.out_c;
      double want = static_cast<double>(sums[i]) * sx * FilterStep(o, oc) + o.bias[oc];
      if (c.relu) want = std::max(want, 0.0);
      CHECK(std::fabs(y.data<float>()[i] - want) <= 1e-5 * std::max(1.0, std::fabs(want)));
    }
  });
}

void CheckCase(const QuantConvCase& c, uint32_t seed) {
  const ConvParams params = ParseConvParams(c.strides, c.dilations, c.padding, {});
  const ConvGeometry g = MakeConvGeometry(params, c.input, GroupedFilter(c));
  const ConvOperands o = MakeOperands(c, g.out_c, seed);
  const double sx = (double{o.max_x} - o.min_x) / 255, zx = -std::round(o.min_x / sx);
  const double so = (double{o.max_o} - o.min_o) / 255, zo = -std::round(o.min_o / so);
  const std::vector<int64_t> sums = ReferenceSums(g, o, static_cast<int64_t>(zx));
  std::vector<double> values(sums.size());
  std::vector<uint8_t> expected(sums.size());
  for (size_t i = 0; i < sums.size(); ++i) {
    const int64_t oc = static_cast<int64_t>(i) % g.out_c;
    const double v = static_cast<double>(sums[i]) * (sx * FilterStep(o, oc) / so) + (o.bias[oc] / so + zo);
    values[i] = std::clamp(v, c.relu ? zo : 0.0, 255.0);
    expected[i] = static_cast<uint8_t>(std::round(values[i]));
  }
  ForEachCpuIsa([&] {
    std::vector<Tensor> out = RunQuantizedConv(c, o);
    REQUIRE(out[0].shape() == g.output_shape());
    ExpectRequantized(out[0], values);
    CHECK(out[1].scalar<float>() == o.min_o);
    CHECK(out[2].scalar<float>() == o.max_o);
  });
  CheckDequantized(c, g, o, sums, sx);

  // Near the float convolution of the dequantized operands: within one
  // output step (the rounding of the last step) where the value is in range.
  std::vector<float> xf(o.x.size()), wf(o.w.size());
  for (size_t i = 0; i < o.x.size(); ++i) xf[i] = static_cast<float>((o.x[i] - zx) * sx);
  const int64_t out_c = g.out_c;
  for (size_t i = 0; i < o.w.size(); ++i) wf[i] = static_cast<float>(o.w[i] * FilterStep(o, i % out_c));
  Tensor yf = Run("Conv2D", {Tensor::FromVector(xf, c.input), Tensor::FromVector(wf, GroupedFilter(c))},
                  {{"strides", c.strides}, {"dilations", c.dilations}, {"padding", c.padding}});
  for (size_t i = 0; i < expected.size(); ++i) {
    double y = yf.data<float>()[i] + o.bias[i % out_c];
    if (c.relu) y = std::max(y, 0.0);
    if (y <= o.min_o || y >= o.max_o) continue;
    const double back = (expected[i] - zo) * so;
    CHECK(std::fabs(back - y) <= so * 0.51 + 1e-4 * std::fabs(y));
  }
}

}  // namespace

TEST_CASE("Quantized Conv2D: exact to its arithmetic, near the float convolution", "[quant]") {
  SECTION("3x3, SAME padding, a zero point in the middle") { CheckCase({.input = {2, 7, 6, 5}, .filter = {3, 3, 5, 7}}, 1); }
  SECTION("stride 2, odd sizes, one filter range") {
    CheckCase({.input = {1, 9, 11, 4}, .filter = {3, 3, 4, 9}, .strides = {1, 2, 2, 1}, .per_channel = false}, 2);
  }
  SECTION("dilation 2, VALID, ReLU") {
    CheckCase({.input = {1, 10, 9, 3}, .filter = {3, 3, 3, 5}, .dilations = {1, 2, 2, 1}, .padding = "VALID",
               .relu = true},
              3);
  }
  SECTION("pointwise") { CheckCase({.input = {2, 5, 7, 16}, .filter = {1, 1, 16, 24}}, 4); }
  SECTION("grouped: 3 groups of 2 channels") { CheckCase({.input = {1, 6, 6, 6}, .filter = {3, 3, 2, 9}}, 5); }
  SECTION("long k: 3x3 over 96 channels") { CheckCase({.input = {1, 5, 5, 96}, .filter = {3, 3, 96, 40}}, 6); }
  SECTION("few pixels, many channels: threads share the channels") {
    CheckCase({.input = {1, 5, 5, 64}, .filter = {3, 3, 64, 80}}, 14);
    CheckCase({.input = {1, 4, 4, 96}, .filter = {1, 1, 96, 112}, .relu = true}, 15);
  }
}

TEST_CASE("Quantized depthwise Conv2D: exact to its arithmetic, near the float convolution", "[quant]") {
  SECTION("multiplier 1, ReLU, stride 1") {
    CheckCase({.input = {2, 7, 8, 6}, .filter = {3, 3, 6, 1}, .depthwise = true, .relu = true}, 7);
  }
  SECTION("multiplier 1, stride 2 (MobileNet's downsampling)") {
    CheckCase({.input = {1, 9, 9, 32}, .filter = {3, 3, 32, 1}, .strides = {1, 2, 2, 1}, .depthwise = true}, 8);
  }
  SECTION("multiplier 1, 56 channels: a block of 32, one of 16 and 8 single ones") {
    CheckCase({.input = {1, 6, 5, 56}, .filter = {3, 3, 56, 1}, .depthwise = true, .relu = true}, 11);
  }
  SECTION("multiplier 1, two images, 4 taps wide, dilation 2, stride 2 across (rows of taps interleaved once)") {
    CheckCase({.input = {2, 9, 10, 40},
               .filter = {2, 4, 40, 1},
               .strides = {1, 1, 2, 1},
               .dilations = {1, 2, 2, 1},
               .depthwise = true},
              12);
  }
  SECTION("multiplier 1, two images, 5x5 (wider than four taps: two groups of taps per filter row)") {
    CheckCase({.input = {2, 8, 9, 48}, .filter = {5, 5, 48, 1}, .depthwise = true, .relu = true}, 13);
  }
  SECTION("multiplier 2, VALID") {
    CheckCase({.input = {1, 6, 7, 3}, .filter = {3, 3, 3, 2}, .padding = "VALID", .depthwise = true}, 9);
  }
  SECTION("as a grouped Conv2D filter [KH, KW, 1, C]") {
    CheckCase({.input = {1, 5, 5, 8}, .filter = {3, 3, 1, 8}, .relu = true}, 10);
  }
}

TEST_CASE("A frozen output range of [0, 6] makes the quantized convolution a ReLU6", "[quant]") {
  QuantConvCase c{.input = {1, 4, 4, 3}, .filter = {3, 3, 3, 4}};
  ConvOperands o = MakeOperands(c, 4, 11);
  o.min_o = 0;
  o.max_o = 6;
  std::vector<Tensor> out = RunQuantizedConv(c, o);
  Tensor back = Run("Dequantize", {out[0], out[1], out[2]});
  for (float v : back.ToVector<float>()) {
    CHECK(v >= 0.0f);
    CHECK(v <= 6.0f);
  }
}

TEST_CASE("Quantized convolutions name what they cannot take", "[quant]") {
  QuantConvCase c{.input = {1, 4, 4, 3}, .filter = {3, 3, 3, 4}};
  ConvOperands good = MakeOperands(c, 4, 12);
  auto fails = [&](QuantConvCase bad_case, ConvOperands bad, const std::string& message) {
    INFO(message);
    ExpectError([&] { RunQuantizedConv(bad_case, bad); }, Code::kInvalidArgument, message);
  };
  ConvOperands o = good;
  o.bias.pop_back();
  fails(c, o, "bias must be a vector of the 4 output channels");
  o = good;
  o.min_x = 0.5f;
  fails(c, o, "the input's range [0.5, 3] must hold 0.0");
  o = good;
  o.min_o = 2;
  o.max_o = 2;
  fails(c, o, "the range of the output must have min < max, got [2, 2]");
  o = good;
  o.min_w.pop_back();
  o.max_w.pop_back();
  fails(c, o, "min_filter must be a scalar or a vector of the 4 output channels");
  QuantConvCase wrong_channels = c;
  wrong_channels.filter = {3, 3, 2, 4};
  fails(wrong_channels, MakeOperands(wrong_channels, 4, 12), "channels");
  QuantConvCase depthwise{.input = {1, 4, 4, 3}, .filter = {3, 3, 6, 1}, .depthwise = true};
  ConvOperands dw = MakeOperands(depthwise, 6, 13);
  fails(depthwise, dw, "a depthwise filter's dim 2 must be the input's 3 channels");
}

TEST_CASE("Quantized convolutions of empty tensors give empty outputs", "[quant]") {
  for (const QuantConvCase& c : {QuantConvCase{.input = {0, 4, 4, 3}, .filter = {3, 3, 3, 4}},
                        QuantConvCase{.input = {1, 4, 4, 3}, .filter = {3, 3, 3, 0}},
                        QuantConvCase{.input = {1, 4, 4, 3}, .filter = {1, 1, 3, 0}},
                        QuantConvCase{.input = {0, 4, 4, 3}, .filter = {3, 3, 3, 1}, .depthwise = true}}) {
    INFO(c.input.ToString() << " * " << c.filter.ToString());
    const int64_t out_c = c.depthwise ? c.filter.dim(2) * c.filter.dim(3) : c.filter.dim(3);
    std::vector<Tensor> out = RunQuantizedConv(c, MakeOperands(c, out_c, 30));
    CHECK(out[0].NumElements() == 0);
  }
}

TEST_CASE("Quantized Conv2D packs its filter once, and again when the filter or the instruction set changes",
          "[quant]") {
  QuantConvCase c{.input = {1, 6, 6, 4}, .filter = {3, 3, 4, 8}};
  const ConvOperands first = MakeOperands(c, 8, 21), second = MakeOperands(c, 8, 22);
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kUInt8);
  Output w = ops::Placeholder(s.WithOpName("w"), DType::kInt8);
  auto conv = ops::QuantizedConv2DWithBiasAndRequantize(
      s, x, w, Tensor::FromVector(first.bias), ScalarOf(first.min_x), ScalarOf(first.max_x),
      Tensor::FromVector(first.min_w), Tensor::FromVector(first.max_w), ScalarOf(first.min_o), ScalarOf(first.max_o));
  Session session(s, {.num_threads = 1});
  auto run = [&](const ConvOperands& o) {
    return session.Run({{x, Tensor::FromVector(first.x, c.input)}, {w, Tensor::FromVector(o.w, c.filter)}},
                       {conv.output})[0];
  };
  // The expected codes of each filter, from a fresh kernel each.
  ConvOperands with_second_filter = first;
  with_second_filter.w = second.w;
  const Tensor expected_first = RunQuantizedConv(c, first)[0];
  const Tensor expected_second = RunQuantizedConv(c, with_second_filter)[0];
  REQUIRE_FALSE(expected_first.Equals(expected_second));
  ForEachCpuIsa([&] {
    CHECK(run(first).Equals(expected_first));
    CHECK(run(first).Equals(expected_first));  // the packed filter reused
    CHECK(run(second).Equals(expected_second));  // a new filter packed
  });
}

// _FusedConv2D against the ops it replaces, Conv2D -> BiasAdd -> Relu |
// Relu6 (Conv2D itself is checked against a naive reference in
// test_conv.cc), on every conv path: im2col with odd sizes, strides,
// dilations, SAME / VALID / EXPLICIT and groups; depthwise with multiplier 1
// and 2; pointwise, large enough to split over threads. Also its errors.
#include <catch2/catch.hpp>

#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

struct FusedCase {
  Shape input, filter;
  int sh, sw, dh, dw;
  std::string padding;
  std::vector<int64_t> explicit_paddings = {};  // 8 NHWC entries for EXPLICIT
};

AttrMap ConvAttrs(const FusedCase& c) {
  return {{"strides", std::vector<int64_t>{1, c.sh, c.sw, 1}},
          {"dilations", std::vector<int64_t>{1, c.dh, c.dw, 1}},
          {"padding", c.padding},
          {"explicit_paddings", c.explicit_paddings}};
}

// activation(Conv2D(x, w) + bias), one op at a time.
Tensor Unfused(const FusedCase& c, const Tensor& x, const Tensor& w, const Tensor& bias,
               const std::string& activation) {
  Tensor y = Run("BiasAdd", {Run("Conv2D", {x, w}, ConvAttrs(c)), bias});
  return activation.empty() ? y : Run(activation, {y});
}

void CheckCase(const FusedCase& c, DType dtype, uint64_t seed) {
  INFO("input " << c.input.ToString() << " filter " << c.filter.ToString() << " strides "
                << c.sh << "," << c.sw << " dilations " << c.dh << "," << c.dw << " "
                << c.padding << " " << DTypeName(dtype));
  // x in [-3, 3) and a bias in [-4, 4) put outputs on both sides of 0 and 6.
  Tensor x = RandomTensor(dtype, c.input, seed, -3, 3);
  Tensor w = RandomTensor(dtype, c.filter, seed + 1);
  Tensor bias = RandomTensor(dtype, {c.filter.dim(3)}, seed + 2, -4, 4);
  double tol = dtype == DType::kFloat32 ? 1e-5 : 1e-12;
  for (std::string activation : {"", "Relu", "Relu6"}) {
    INFO("activation '" << activation << "'");
    AttrMap attrs = ConvAttrs(c);
    attrs["activation"] = activation;
    Tensor fused = Run("_FusedConv2D", {x, w, bias}, attrs);
    ExpectClose(fused, Unfused(c, x, w, bias, activation), tol, tol);
  }
}

}  // namespace

TEST_CASE("_FusedConv2D equals Conv2D, BiasAdd and the activation on every conv path",
          "[fused_conv]") {
  const std::vector<FusedCase> cases = {
      // im2col: odd sizes, strides, dilations, each padding mode
      {{2, 7, 9, 3}, {3, 3, 3, 5}, 2, 1, 1, 1, "SAME"},
      {{1, 11, 8, 4}, {3, 2, 4, 6}, 1, 2, 2, 1, "VALID"},
      {{2, 6, 5, 2}, {2, 3, 2, 7}, 3, 2, 1, 2, "EXPLICIT", {0, 0, 1, 2, 2, 0, 0, 0}},
      // groups (3 groups of 2 channels), and a 1x1 that is not pointwise (stride 2)
      {{1, 9, 7, 6}, {3, 3, 2, 9}, 1, 1, 1, 1, "SAME"},
      {{2, 8, 8, 5}, {1, 1, 5, 4}, 2, 2, 1, 1, "SAME"},
      // depthwise, multiplier 1 and 2
      {{2, 9, 10, 5}, {3, 3, 1, 5}, 2, 2, 1, 1, "SAME"},
      {{1, 8, 7, 3}, {3, 3, 1, 6}, 1, 1, 2, 2, "VALID"},
      // pointwise: small; wide (fewer pixels than channels: one GEMM, then
      // the epilogue); tall, split over the threads, in several chunks of pixels
      {{2, 13, 13, 8}, {1, 1, 8, 16}, 1, 1, 1, 1, "SAME"},
      {{1, 5, 7, 24}, {1, 1, 24, 64}, 1, 1, 1, 1, "SAME"},
      {{1, 40, 40, 32}, {1, 1, 32, 48}, 1, 1, 1, 1, "VALID"},
      {{1, 30, 31, 16}, {1, 1, 16, 512}, 1, 1, 1, 1, "SAME"},
      // im2col split over threads
      {{2, 33, 31, 16}, {3, 3, 16, 24}, 1, 1, 1, 1, "SAME"},
  };
  uint64_t seed = 10;
  for (const FusedCase& c : cases) {
    CheckCase(c, DType::kFloat32, seed);
    CheckCase(c, DType::kFloat64, seed);
    seed += 3;
  }
}

TEST_CASE("_FusedConv2D rejects a bad bias or activation", "[fused_conv]") {
  Tensor x = RandomTensor(DType::kFloat32, {1, 5, 5, 2}, 1);
  Tensor w = RandomTensor(DType::kFloat32, {3, 3, 2, 4}, 2);
  AttrMap attrs = {{"padding", std::string("SAME")}};
  ExpectError([&] { Run("_FusedConv2D", {x, w, RandomTensor(DType::kFloat32, {3}, 3)}, attrs); },
              Code::kInvalidArgument, "bias must be a vector of the 4 output channels");
  attrs["activation"] = std::string("Sigmoid");
  ExpectError([&] { Run("_FusedConv2D", {x, w, RandomTensor(DType::kFloat32, {4}, 3)}, attrs); },
              Code::kInvalidArgument, "activation must be");
}

TEST_CASE("ops::FusedConv2D builds the fused op with Conv2D's attrs", "[fused_conv]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s, DType::kFloat32, {-1, 8, 8, 3});
  Output w = ops::Const(s, RandomTensor(DType::kFloat32, {3, 3, 3, 4}, 1));
  Output bias = ops::Const(s, Tensor::Zeros(DType::kFloat32, {4}));
  Output y = ops::FusedConv2D(s.WithOpName("y"), x, w, bias,
                              {.strides = {1, 2, 2, 1}, .padding = "VALID"}, "Relu6");
  CHECK(y.node()->op() == "_FusedConv2D");
  CHECK(y.node()->attr<std::string>("activation") == "Relu6");
  CHECK(y.shape() == Shape{-1, 3, 3, 4});
}

// The GPU's int8 sums (ops/cuda/quant_sums.h), checked on the CPU: every
// output of the direct convolution of each kind (dense, strided, dilated,
// grouped, 1x1, depthwise with multipliers 1 and 2, SAME and VALID) and of
// the dense layer, taken through the same output stage as the CPU kernels
// (ops/quant_arithmetic.h with the CPU's tables), against dflow's CPU ops.
// The GPU kernels that run these sums are compared with the CPU in
// test_cuda_quant.cc.
#include <catch2/catch.hpp>

#include <limits>

#include "ops/conv.h"
#include "ops/cpu/quantize_steps.h"
#include "ops/cuda/quant_sums.h"
#include "ops/quant_arithmetic.h"
#include "tests/ops/int8_conv_cases.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

cuda::ConvShape ShapeOf(const ConvGeometry& g) {
  return {g.batch,    g.in_h,     g.in_w,     g.in_c,     g.k_h,      g.k_w,
          g.filter_c, g.out_c,    g.groups,   g.out_h,    g.out_w,    g.pad_top,
          g.pad_left, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w};
}

std::vector<double> WeightSteps(const std::vector<float>& min, const std::vector<float>& max) {
  std::vector<double> steps;
  for (size_t j = 0; j < min.size(); ++j) steps.push_back(cpu::ScaledStep(min[j], max[j], -128, 127));
  return steps;
}

}  // namespace

TEST_CASE("int8 GPU sums: the direct convolution of every kind equals the CPU kernel's", "[quant_sums]") {
  const Tensor x = RandomTensor(DType::kUInt8, {2, 7, 6, 4}, 411, 0, 255);
  const float in_min = -1.5f, in_max = 2.5f;
  const cpu::MinFirstCodes in = cpu::MinFirstCodesOf(in_min, in_max, 0);
  for (const Int8ConvCase& c : Int8ConvCases()) {
    INFO("filter " << c.filter.ToString() << " padding " << c.padding << (c.depthwise ? " depthwise" : ""));
    const int64_t out_c = c.out_channels();
    std::vector<float> w_min, w_max;
    for (int64_t o = 0; o < out_c; ++o) w_min.push_back(-0.1f * (o + 1)), w_max.push_back(0.05f * (o + 2));
    const Tensor w = RandomTensor(DType::kInt8, c.filter, 412, -127, 127);
    const Tensor bias = RandomTensor(DType::kFloat32, {out_c}, 413, -1, 1);
    const Tensor got = RunOp1({.op = c.op("AndDequantize"),
                               .inputs = {x, w, bias, Tensor::Scalar(in_min), Tensor::Scalar(in_max),
                                          Tensor::FromVector(w_min), Tensor::FromVector(w_max)},
                               .attrs = {{"strides", c.strides}, {"dilations", c.dilations}, {"padding", c.padding}}});

    const Shape grouped = c.depthwise ? Shape{c.filter.dim(0), c.filter.dim(1), 1, out_c} : c.filter;
    const cuda::ConvShape s =
        ShapeOf(MakeConvGeometry(ParseConvParams(c.strides, c.dilations, c.padding, {}), x.shape(), grouped));
    const cpu::Dequantization stage(in.step, WeightSteps(w_min, w_max), bias.data<float>(), false);
    Tensor want(DType::kFloat32, got.shape());
    REQUIRE(want.NumElements() == s.batch * s.out_h * s.out_w * s.out_c);
    for (int64_t at = 0; at < want.NumElements(); ++at) {
      const int32_t acc = cuda::ConvWindowSum(s, x.data<uint8_t>(), w.data<int8_t>(),
                                              static_cast<int32_t>(in.zero_point), at);
      const int64_t o = at % out_c;
      want.data<float>()[at] =
          quant::DequantizedValue(acc, stage.scale[o], bias.data<float>()[o], -std::numeric_limits<float>::infinity());
    }
    ExpectClose(got, want, 1e-6, 1e-6);
  }
}

TEST_CASE("int8 GPU sums: the dense layer equals the CPU kernel's, b as given or transposed", "[quant_sums]") {
  const int64_t m = 5, k = 40, n = 9;
  const Tensor a = RandomTensor(DType::kUInt8, {m, k}, 421, 0, 255);
  const Tensor bias = RandomTensor(DType::kFloat32, {n}, 423, -1, 1);
  const float a_min = -1.0f, a_max = 3.0f, b_min = -0.5f, b_max = 0.5f, out_min = -20.0f, out_max = 20.0f;
  const cpu::MinFirstCodes in = cpu::MinFirstCodesOf(a_min, a_max, 0);
  const cpu::Requantization stage(in.step, std::vector<double>(n, cpu::ScaledStep(b_min, b_max, -128, 127)),
                                  bias.data<float>(), cpu::MinFirstCodesOf(out_min, out_max, 0), false);
  for (bool transpose_b : {false, true}) {
    INFO("transpose_b " << transpose_b);
    const Tensor b = RandomTensor(DType::kInt8, transpose_b ? Shape{n, k} : Shape{k, n}, 422, -127, 127);
    const Tensor got = RunOp1({.op = "QuantizedMatMulWithBiasAndRequantize",
                               .inputs = {a, b, bias, Tensor::Scalar(a_min), Tensor::Scalar(a_max),
                                          Tensor::Scalar(b_min), Tensor::Scalar(b_max), Tensor::Scalar(out_min),
                                          Tensor::Scalar(out_max)},
                               .attrs = {{"transpose_b", transpose_b}}});
    Tensor want(DType::kUInt8, {m, n});
    for (int64_t at = 0; at < m * n; ++at) {
      const int32_t acc = cuda::DenseSum(k, n, transpose_b, a.data<uint8_t>(), b.data<int8_t>(),
                                         static_cast<int32_t>(in.zero_point), at);
      want.data<uint8_t>()[at] =
          quant::RequantizedCode(acc, stage.scale[at % n], stage.offset[at % n], stage.lowest);
    }
    ExpectEqual(got, want);
  }
}

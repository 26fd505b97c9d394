// The implicit-GEMM convolutions' index arithmetic (ops/cuda/conv_gemm.h),
// checked on the CPU: the fast divider against '/', and each problem's
// A * B, multiplied naively here and stored through the problem, against
// dflow's CPU Conv2D and its gradients. The GPU's tiled kernel that runs
// these problems is compared with the CPU in test_cuda_ops.cc.
#include <catch2/catch.hpp>

#include <random>

#include "ops/conv.h"
#include "ops/cuda/conv_gemm.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

TEST_CASE("FastDivider divides like '/' over the 31-bit range", "[conv_gemm]") {
  std::mt19937 random(7);
  std::vector<uint32_t> divisors = {1, 2, 3, 5, 7, 8, 9, 49, 56, 112, 224, 243, 784, 50176, 65535,
                                    65536, 1000003, (1u << 30) + 1, (1u << 31) - 1};
  for (int i = 0; i < 200; ++i) divisors.push_back(1 + random() % ((1u << 31) - 1));
  for (uint32_t d : divisors) {
    cuda::FastDivider divider(d);
    std::vector<int> numerators = {0, 1, static_cast<int>(d) - 1, static_cast<int>(d),
                                   static_cast<int>(std::min<uint64_t>(uint64_t{d} * 2 + 1, (1u << 31) - 1)),
                                   (1 << 30), (1 << 30) + 17, 2147483647};
    for (int i = 0; i < 200; ++i) numerators.push_back(static_cast<int>(random() % (1u << 31)));
    for (int n : numerators) {
      if (n < 0) continue;
      int quotient, rest = divider.DivMod(n, quotient);
      INFO(n << " / " << d);
      REQUIRE(quotient == static_cast<int>(static_cast<uint32_t>(n) / d));
      REQUIRE(rest == static_cast<int>(static_cast<uint32_t>(n) % d));
    }
  }
}

struct Case {
  int n, h, w, c, kh, kw, filter_c, o;
  int sh, sw, dh, dw;
  std::string padding;
};

// C = A * B over the problem's own element functions, stored through it;
// where the problem reads A four k at a time, those runs must equal A.
template <typename Problem>
void MultiplyNaively(const Problem& p, int groups) {
  for (int g = 0; g < groups; ++g)
    for (int m = 0; m < p.m; ++m) {
      auto row = p.RowAt(m, g);
      if (p.runs_of_4()) {
        REQUIRE(p.k % 4 == 0);
        for (int k = 0; k < p.k; k += 4) {
          float four[4];
          p.A4(row, k, g, four);
          for (int i = 0; i < 4; ++i) REQUIRE(four[i] == p.A(row, k + i, g));
        }
      }
      for (int col = 0; col < p.n; ++col) {
        double sum = 0;
        for (int k = 0; k < p.k; ++k) sum += double{p.A(row, k, g)} * p.B(k, col, g);
        p.Store(m, col, g, static_cast<float>(sum));
      }
    }
}

cuda::ConvDims DimsOf(const ConvGeometry& g) {
  auto i = [](int64_t v) { return static_cast<int>(v); };
  return {i(g.batch), i(g.in_h), i(g.in_w), i(g.in_c), i(g.k_h), i(g.k_w), i(g.filter_c),
          i(g.out_c), i(g.groups), i(g.out_h), i(g.out_w), i(g.pad_top), i(g.pad_left),
          i(g.stride_h), i(g.stride_w), i(g.dilation_h), i(g.dilation_w)};
}

TEST_CASE("implicit-GEMM convolutions equal Conv2D and its gradients on the CPU", "[conv_gemm]") {
  // Strides 1-3, dilations 1-2, SAME and VALID, groups, kernels wider than
  // the stride (the phases of a transposed convolution) and narrower,
  // channel counts that are multiples of 4 (A read in runs of 4) and not.
  const std::vector<Case> cases = {
      {2, 9, 8, 3, 3, 3, 3, 5, 1, 1, 1, 1, "SAME"},   {2, 9, 8, 4, 5, 3, 4, 6, 2, 2, 1, 1, "SAME"},
      {1, 11, 10, 4, 7, 7, 2, 6, 2, 2, 1, 1, "SAME"}, {2, 8, 9, 6, 3, 2, 2, 6, 1, 2, 2, 1, "VALID"},
      {1, 10, 10, 2, 2, 2, 2, 3, 3, 3, 1, 1, "VALID"}, {1, 12, 7, 3, 3, 3, 3, 4, 3, 2, 2, 2, "SAME"},
      {2, 6, 6, 8, 1, 1, 4, 4, 2, 2, 1, 1, "VALID"},  {1, 13, 11, 2, 9, 9, 2, 3, 1, 1, 1, 1, "SAME"},
      {2, 9, 10, 8, 3, 3, 8, 8, 2, 2, 1, 1, "SAME"},  {1, 8, 8, 8, 3, 3, 4, 8, 1, 1, 1, 1, "SAME"},
      {1, 9, 9, 4, 5, 5, 4, 12, 2, 2, 2, 2, "SAME"}};
  for (const Case& c : cases) {
    INFO("input " << c.n << "x" << c.h << "x" << c.w << "x" << c.c << " filter " << c.kh << "x" << c.kw
                  << "x" << c.filter_c << "x" << c.o << " strides " << c.sh << "," << c.sw
                  << " dilations " << c.dh << "," << c.dw << " " << c.padding);
    AttrMap attrs = {{"strides", std::vector<int64_t>{1, c.sh, c.sw, 1}},
                     {"dilations", std::vector<int64_t>{1, c.dh, c.dw, 1}},
                     {"padding", c.padding}};
    Tensor x = RandomTensor(DType::kFloat32, Shape{c.n, c.h, c.w, c.c}, 1);
    Tensor w = RandomTensor(DType::kFloat32, Shape{c.kh, c.kw, c.filter_c, c.o}, 2);
    Tensor y = Run("Conv2D", {x, w}, attrs);
    Tensor dy = RandomTensor(DType::kFloat32, y.shape(), 3);
    ConvParams params = ParseConvParams({1, c.sh, c.sw, 1}, {1, c.dh, c.dw, 1}, c.padding, {});
    cuda::ConvDims d = DimsOf(MakeConvGeometry(params, x.shape(), w.shape()));

    Tensor bias = RandomTensor(DType::kFloat32, Shape{c.o}, 4);
    Tensor fused(DType::kFloat32, y.shape());
    MultiplyNaively(cuda::ConvForwardGemm(d, x.data<float>(), w.data<float>(), fused.data<float>(),
                                          bias.data<float>(), cuda::ConvEpilogue::kBiasRelu6),
                    d.groups);
    AttrMap fused_attrs = attrs;
    fused_attrs["activation"] = std::string("Relu6");
    ExpectClose(fused, Run("_FusedConv2D", {x, w, bias}, fused_attrs), 1e-4, 1e-5);

    Tensor dw(DType::kFloat32, w.shape());
    MultiplyNaively(cuda::ConvFilterGemm(d, x.data<float>(), dy.data<float>(), dw.data<float>()),
                    d.groups);
    ExpectClose(dw,
                   Run("Conv2DBackpropFilter",
                       {x, Tensor::FromVector<int32_t>({c.kh, c.kw, c.filter_c, c.o}), dy}, attrs),
                   1e-5, 1e-5);

    // Every phase writes its own input pixels; NaN marks one none wrote.
    Tensor dx(DType::kFloat32, x.shape());
    std::fill_n(dx.data<float>(), dx.NumElements(), std::nanf(""));
    for (int first_h = 0; first_h < std::min(c.sh, c.h); ++first_h)
      for (int first_w = 0; first_w < std::min(c.sw, c.w); ++first_w)
        MultiplyNaively(cuda::ConvInputGemm(d, first_h, first_w, w.data<float>(), dy.data<float>(),
                                            dx.data<float>()),
                        d.groups);
    ExpectClose(dx,
                   Run("Conv2DBackpropInput",
                       {Tensor::FromVector<int32_t>({c.n, c.h, c.w, c.c}), w, dy}, attrs),
                   1e-5, 1e-5);
  }
}

}  // namespace

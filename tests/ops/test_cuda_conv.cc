// The GPU convolutions (ops/cuda/conv.cc: depthwise kernels, cuBLAS on
// pointwise ones, implicit GEMMs, im2col) against the CPU: Conv2D,
// _FusedConv2D and both gradients, on small geometries of every kind and on
// the benchmark networks' shapes with each algorithm DFLOW_CONV_ALGORITHM can
// choose. Without a GPU the comparisons are skipped with a WARN.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "ops/ops.h"
#include "tests/ops/device_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

TEST_CASE("cuda: Conv2D, _FusedConv2D and the conv gradients match the CPU", "[cuda]") {
  struct Case {
    Shape filter;
    std::vector<int64_t> strides, dilations;
    std::string padding;
  };
  // Dense, strided SAME, dilated VALID, grouped (2 groups), depthwise (multiplier 2), 1x1.
  const std::vector<Case> cases = {{{3, 3, 4, 5}, {1, 1, 1, 1}, {1, 1, 1, 1}, "SAME"},
                                   {{3, 2, 4, 6}, {1, 2, 2, 1}, {1, 1, 1, 1}, "SAME"},
                                   {{2, 3, 4, 3}, {1, 1, 1, 1}, {1, 2, 2, 1}, "VALID"},
                                   {{3, 3, 2, 6}, {1, 1, 2, 1}, {1, 1, 1, 1}, "SAME"},
                                   {{3, 3, 1, 8}, {1, 2, 1, 1}, {1, 1, 1, 1}, "SAME"},
                                   {{1, 1, 4, 7}, {1, 1, 1, 1}, {1, 1, 1, 1}, "VALID"}};
  Tensor x = Floats({2, 7, 6, 4}, 111);
  for (const Case& c : cases) {
    INFO("filter " << c.filter.ToString() << " padding " << c.padding);
    AttrMap attrs = {{"strides", c.strides}, {"dilations", c.dilations}, {"padding", c.padding}};
    Tensor w = Floats(c.filter, 112);
    ExpectSameOnAllDevices({.op = "Conv2D", .inputs = {x, w}, .attrs = attrs});
    AttrMap fused = attrs;
    fused["activation"] = std::string("Relu6");
    ExpectSameOnAllDevices({.op = "_FusedConv2D",
                            .inputs = {x, w, Floats({c.filter.dim(3)}, 113)},
                            .attrs = fused});
    Tensor y = RunOp1({.op = "Conv2D", .inputs = {x, w}, .attrs = attrs});
    Tensor dy = Floats(y.shape(), 114);
    ExpectSameOnAllDevices({.op = "Conv2DBackpropInput",
                            .inputs = {Tensor::FromVector<int32_t>({2, 7, 6, 4}), w, dy},
                            .attrs = attrs,
                            .const_inputs = {0}});
    std::vector<int32_t> filter_sizes;
    for (int64_t d : c.filter.dims()) filter_sizes.push_back(static_cast<int32_t>(d));
    ExpectSameOnAllDevices({.op = "Conv2DBackpropFilter",
                            .inputs = {x, Tensor::FromVector<int32_t>(filter_sizes), dy},
                            .attrs = attrs,
                            .const_inputs = {1}});
  }
}

// The convolution shapes of the counting network and SSD heads, scaled down
// but larger than one tile of the implicit GEMM: few channels and wide
// kernels, stride-2 gathers (transposed convolutions), a k split over many
// blocks (filter gradients), more than 128 output channels, groups; with
// each algorithm DFLOW_CONV_ALGORITHM can choose.
TEST_CASE("cuda: convolutions of real networks' shapes match the CPU with either algorithm", "[cuda]") {
  if (SkipWithoutGpu("convolutions of real networks' shapes")) return;
  struct Case {
    Shape input, filter;
    int stride;
  };
  const std::vector<Case> cases = {{{2, 45, 38, 3}, {9, 9, 3, 16}, 1},   {{2, 30, 33, 16}, {7, 7, 16, 8}, 2},
                                   {{1, 40, 40, 20}, {5, 5, 20, 10}, 2}, {{2, 19, 19, 64}, {3, 3, 64, 150}, 1},
                                   {{3, 23, 17, 12}, {3, 3, 6, 20}, 1},  {{1, 10, 10, 256}, {3, 3, 256, 33}, 2}};
  for (const char* algorithm : {"implicit", "im2col"}) {
    setenv("DFLOW_CONV_ALGORITHM", algorithm, 1);
    for (const Case& c : cases) {
      INFO(algorithm << ": input " << c.input.ToString() << " filter " << c.filter.ToString()
                     << " stride " << c.stride);
      AttrMap attrs = {{"strides", std::vector<int64_t>{1, c.stride, c.stride, 1}}, {"padding", std::string("SAME")}};
      Tensor x = Floats(c.input, 121), w = Floats(c.filter, 122);
      ExpectSameOnAllDevices({.op = "Conv2D", .inputs = {x, w}, .attrs = attrs});
      AttrMap fused = attrs;
      fused["activation"] = std::string("Relu");
      ExpectSameOnAllDevices(
          {.op = "_FusedConv2D", .inputs = {x, w, Floats({c.filter.dim(3)}, 123)}, .attrs = fused});
      Tensor dy = Floats(RunOp1({.op = "Conv2D", .inputs = {x, w}, .attrs = attrs}).shape(), 124);
      std::vector<int32_t> input_sizes, filter_sizes;
      for (int64_t d : c.input.dims()) input_sizes.push_back(static_cast<int32_t>(d));
      for (int64_t d : c.filter.dims()) filter_sizes.push_back(static_cast<int32_t>(d));
      ExpectSameOnAllDevices({.op = "Conv2DBackpropInput",
                              .inputs = {Tensor::FromVector<int32_t>(input_sizes), w, dy},
                              .attrs = attrs,
                              .const_inputs = {0}});
      ExpectSameOnAllDevices({.op = "Conv2DBackpropFilter",
                              .inputs = {x, Tensor::FromVector<int32_t>(filter_sizes), dy},
                              .attrs = attrs,
                              .const_inputs = {1}});
    }
  }
  unsetenv("DFLOW_CONV_ALGORITHM");
}

}  // namespace

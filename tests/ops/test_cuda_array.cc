// The GPU's array and index kernels against the CPU's (ops/cuda/array.cc,
// index.{cc,cu}, pad_tile.{cc,cu}): Slice, Transpose, ConcatV2, Split,
// GatherV2, OneHot, Pad, PadV2 and Tile, on float and integer tensors.
// Without a GPU the comparisons are skipped (a WARN says so).
#include <catch2/catch.hpp>

#include "ops/ops.h"
#include "tests/ops/device_test_util.h"

using namespace dflow;
using namespace dflow::testing;

TEST_CASE("cuda: Slice, Transpose, ConcatV2 and Split match the CPU", "[cuda]") {
  Tensor x = Floats({4, 5, 6}, 141);
  Tensor ints = RandomTensor(DType::kInt64, {4, 5, 6}, 142, -9, 9);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> slices = {
      {{1, 0, 2}, {2, -1, 3}}, {{0, 4, 0}, {4, 1, 6}}, {{3, 2, 5}, {1, 3, 1}}, {{0, 0, 0}, {-1, -1, -1}}};
  for (const auto& [begin, size] : slices)
    for (const Tensor& input : {x, ints})
      ExpectSameOnAllDevices({.op = "Slice",
                              .inputs = {input, Tensor::FromVector(begin), Tensor::FromVector(size)},
                              .const_inputs = {1, 2}});
  for (int64_t axis : {0, 1, -1}) {
    Shape a{4, 5, 6}, b{4, 5, 6};
    a.set_dim(axis < 0 ? 2 : axis, 2);
    b.set_dim(axis < 0 ? 2 : axis, 3);
    ExpectSameOnAllDevices({.op = "ConcatV2",
                            .inputs = {Floats(a, 143), x, Floats(b, 144),
                                       Tensor::Scalar(static_cast<int32_t>(axis))},
                            .const_inputs = {3}});
  }
  ExpectSameOnAllDevices({.op = "ConcatV2",
                          .inputs = {ints, ints, Tensor::Scalar<int32_t>(1)},
                          .const_inputs = {2}});
  for (std::vector<int32_t> perm : {std::vector<int32_t>{2, 0, 1}, std::vector<int32_t>{1, 0, 2},
                                    std::vector<int32_t>{0, 1, 2}})
    for (const Tensor& input : {x, ints})
      ExpectSameOnAllDevices({.op = "Transpose", .inputs = {input, Tensor::FromVector(perm)},
                              .const_inputs = {1}});
  // x is [4, 5, 6]: (axis, pieces) that divide it.
  for (auto [axis, pieces] : {std::pair<int32_t, int64_t>{0, 2}, {2, 3}, {-2, 5}, {1, 1}})
    ExpectSameOnAllDevices({.op = "Split",
                            .inputs = {Tensor::Scalar(axis), x},
                            .attrs = {{"num_split", pieces}},
                            .const_inputs = {0}});
}

TEST_CASE("cuda: GatherV2 and OneHot match the CPU", "[cuda]") {
  Tensor params = Floats({4, 5, 3}, 161);
  Tensor ints = RandomTensor(DType::kInt64, {4, 5, 3}, 162, -9, 9);
  Tensor rows = Tensor::FromVector<int32_t>({3, 0, 3, 1, 2, 0}).Reshaped(Shape{2, 3});
  for (const Tensor& p : {params, ints}) {
    ExpectSameOnAllDevices({.op = "GatherV2", .inputs = {p, rows, Tensor::Scalar<int32_t>(0)},
                            .const_inputs = {2}});
    ExpectSameOnAllDevices({.op = "GatherV2",
                            .inputs = {p, Tensor::FromVector<int64_t>({4, 4, 1}),
                                       Tensor::Scalar<int32_t>(1)},
                            .const_inputs = {2}});
  }
  ExpectSameOnAllDevices({.op = "GatherV2",
                          .inputs = {params, Tensor::FromVector<int32_t>({1, 2, 0, 4}).Reshaped(Shape{4, 1}),
                                     Tensor::Scalar<int32_t>(1)},
                          .attrs = {{"batch_dims", int64_t{1}}},
                          .const_inputs = {2}});
  // Out-of-range indices (-1, 4) give rows of off_value.
  Tensor labels = Tensor::FromVector<int64_t>({0, 3, -1, 2, 4, 1}).Reshaped(Shape{2, 3});
  for (int64_t axis : {-1, 0, 1})
    ExpectSameOnAllDevices({.op = "OneHot",
                            .inputs = {labels, Tensor::Scalar<int32_t>(4), Tensor::Scalar(1.0f),
                                       Tensor::Scalar(-0.5f)},
                            .attrs = {{"axis", axis}},
                            .const_inputs = {1}});
  ExpectSameOnAllDevices({.op = "OneHot",
                          .inputs = {Tensor::FromVector<uint8_t>({2, 0, 1}), Tensor::Scalar<int32_t>(3),
                                     Tensor::Scalar<int64_t>(7), Tensor::Scalar<int64_t>(0)},
                          .const_inputs = {1}});
}

TEST_CASE("cuda: a GatherV2 index out of range is named on the GPU too", "[cuda]") {
  if (SkipWithoutGpu("the bad-index case")) return;
  ExpectError(
      [] {
        RunOp({.op = "GatherV2",
               .inputs = {Floats({3, 2}, 163), Tensor::FromVector<int32_t>({1, 3}),
                          Tensor::Scalar<int32_t>(0)},
               .const_inputs = {2},
               .device = "/device:GPU:0"});
      },
      Code::kOutOfRange, "indices[1] = 3 is out of range");
}

TEST_CASE("cuda: Pad, PadV2 and Tile match the CPU", "[cuda]") {
  Tensor x = Floats({3, 2, 4}, 171);
  Tensor ints = RandomTensor(DType::kInt64, {3, 2, 4}, 172, -9, 9);
  Tensor paddings = Tensor::FromVector<int32_t>({1, 2, 0, 3, 2, 0}, Shape{3, 2});
  for (const Tensor& input : {x, ints}) {
    ExpectSameOnAllDevices({.op = "Pad", .inputs = {input, paddings}, .const_inputs = {1}});
    Tensor constant = input.dtype() == DType::kFloat32 ? Tensor::Scalar(-1.5f)
                                                        : Tensor::Scalar<int64_t>(7);
    ExpectSameOnAllDevices({.op = "PadV2", .inputs = {input, paddings, constant},
                            .const_inputs = {1}});
    ExpectSameOnAllDevices({.op = "Tile",
                            .inputs = {input, Tensor::FromVector<int32_t>({2, 1, 3})},
                            .const_inputs = {1}});
  }
  ExpectSameOnAllDevices({.op = "Tile", .inputs = {Tensor::Scalar(2.5f), Tensor::FromVector<int32_t>({})},
                          .const_inputs = {1}});
}

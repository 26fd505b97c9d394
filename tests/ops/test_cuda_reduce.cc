// The GPU reductions (ops/cuda/reduce.{cc,cu}) against the CPU: Sum, Mean,
// Max, Min and Prod over any axes, SumToShape, and long reductions into few
// outputs (cut into slices; rows of a matrix, as a bias gradient).
#include <catch2/catch.hpp>

#include "ops/ops.h"
#include "tests/ops/device_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

TEST_CASE("cuda: reductions over any axes match the CPU", "[cuda]") {
  const std::vector<std::vector<int64_t>> axes_cases = {{0}, {1}, {2}, {0, 2}, {-1}, {0, 1, 2}};
  for (std::string op : {"Sum", "Mean", "Max", "Min"})
    for (const auto& axes : axes_cases)
      for (bool keep : {false, true})
        ExpectSameOnAllDevices({.op = op,
                                .inputs = {Floats({4, 70, 3}, 41), Tensor::FromVector(axes)},
                                .attrs = {{"keep_dims", keep}},
                                .const_inputs = {1}});
  // Factors near 1, so that products of 70 of them stay near 1 too.
  for (const auto& axes : axes_cases)
    ExpectSameOnAllDevices({.op = "Prod",
                            .inputs = {Floats({4, 70, 3}, 43, 0.97, 1.03), Tensor::FromVector(axes)},
                            .const_inputs = {1}});
  ExpectSameOnAllDevices({.op = "SumToShape",
                          .inputs = {Floats({5, 4, 3}, 42), Tensor::FromVector<int64_t>({4, 1})},
                          .const_inputs = {1}});
}

// Few outputs, each over many elements: the reductions cut into slices.
TEST_CASE("cuda: long reductions into few outputs match the CPU", "[cuda]") {
  for (std::string op : {"Sum", "Mean", "Max", "Min"}) {
    ExpectSameOnAllDevices({.op = op,
                            .inputs = {Floats({50000, 3}, 44), Tensor::FromVector<int64_t>({0})},
                            .const_inputs = {1}});
    ExpectSameOnAllDevices({.op = op,
                            .inputs = {Floats({2, 41000}, 45), Tensor::FromVector<int64_t>({1})},
                            .const_inputs = {1}});
    ExpectSameOnAllDevices({.op = op,
                            .inputs = {Floats({4, 9000, 2}, 46), Tensor::FromVector<int64_t>({0, 1})},
                            .const_inputs = {1}});
  }
  ExpectSameOnAllDevices({.op = "BiasAddGrad", .inputs = {Floats({8, 64, 64, 8}, 47)}});
}

}  // namespace

// Numeric gradient check cases of the CNN ops: pooling (and its gradient
// ops, second order), BiasAdd, batch norm and resize. Tensors stay small:
// the checker runs the graph once per output element and twice per input.
#include <algorithm>
#include <numeric>
#include <random>

#include "tests/autodiff/grad_cases.h"

#include "ops/ops.h"

namespace dflow::testing {
namespace {

using In = std::vector<Output>;

// x * 0.25 plus a shuffled ramp spaced 0.6 apart: for x in [-1, 1) every
// value differs from every other by > 0.1, so the finite-difference step
// (1e-3) never changes which element of a window is the maximum.
Output Distinct(const Scope& s, const Output& x) {
  const Shape& shape = x.shape();
  std::vector<int64_t> order(shape.NumElements());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(shape.NumElements()));
  std::vector<double> ramp(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    ramp[i] = (static_cast<double>(order[i]) - static_cast<double>(order.size()) / 2) * 0.6;
  return ops::Add(s, ops::Mul(s, x, 0.25), Tensor::FromVector(ramp, shape));
}

Tensor ShapeTensor(const Shape& shape) {
  std::vector<int32_t> dims(shape.dims().begin(), shape.dims().end());
  return Tensor::FromVector(dims);
}

struct PoolSetup {
  Shape input;
  ops::PoolWindow window;
  Shape pooled;
};

const std::vector<PoolSetup> kPools = {
    {{1, 5, 5, 2}, {{1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"}, {1, 3, 3, 2}},
    {{2, 4, 6, 3}, {{1, 2, 3, 1}, {1, 1, 2, 1}, "VALID"}, {2, 3, 2, 3}},
    // Asymmetric pads: rows (5 + 2 + 0 - 3) / 2 + 1, columns (5 + 1 + 2 - 3) / 2 + 1.
    {{1, 5, 5, 2}, {{1, 3, 3, 1}, {1, 2, 2, 1}, "EXPLICIT", {0, 0, 2, 0, 1, 2, 0, 0}}, {1, 3, 3, 2}},
    {{2, 4, 6, 3}, {{1, 2, 3, 1}, {1, 1, 2, 1}, "EXPLICIT", {0, 0, 1, 0, 0, 2, 0, 0}}, {2, 4, 3, 3}},
};

void AddPoolCases(std::vector<GradCase>& c) {
  for (const PoolSetup& p : kPools) {
    auto w = p.window;
    c.push_back({"MaxPool", {p.input}, [w](const Scope& s, const In& x) {
                   return ops::MaxPool(s, Distinct(s, x[0]), w);
                 }});
    // Second order: MaxPoolGrad's rule builds MaxPoolGradGrad and vice versa.
    c.push_back({"MaxPoolGrad", {p.input, p.pooled}, [w](const Scope& s, const In& x) {
                   Output xd = Distinct(s, x[0]);
                   return ops::MaxPoolGrad(s, xd, ops::MaxPool(s, xd, w), x[1], w);
                 }});
    c.push_back({"MaxPoolGradGrad", {p.input, p.input}, [w](const Scope& s, const In& x) {
                   Output xd = Distinct(s, x[0]);
                   return ops::MaxPoolGradGrad(s, xd, ops::MaxPool(s, xd, w), x[1], w);
                 }});
    c.push_back({"AvgPool", {p.input}, [w](const Scope& s, const In& x) {
                   return ops::AvgPool(s, x[0], w);
                 }});
    Shape input = p.input;
    c.push_back({"AvgPoolGrad", {p.pooled}, [w, input](const Scope& s, const In& x) {
                   return ops::AvgPoolGrad(s, ShapeTensor(input), x[0], w);
                 }});
  }
}

void AddBiasCases(std::vector<GradCase>& c) {
  auto bias_add = [](const Scope& s, const In& x) { return ops::BiasAdd(s, x[0], x[1]); };
  c.push_back({"BiasAdd", {{2, 3, 4}, {4}}, bias_add});
  c.push_back({"BiasAdd", {{2, 2, 3, 5}, {5}}, bias_add});
  auto bias_add_grad = [](const Scope& s, const In& x) { return ops::BiasAddGrad(s, x[0]); };
  c.push_back({"BiasAddGrad", {{3, 4}}, bias_add_grad});
  c.push_back({"BiasAddGrad", {{2, 2, 3, 5}}, bias_add_grad});
}

// x, scale and offset are fed; mean and variance are constants (they get
// no gradient). Training reads neither; inference uses them.
void AddBatchNormCases(std::vector<GradCase>& c) {
  Tensor none = Tensor::FromVector<double>({});
  c.push_back({"FusedBatchNorm", {{2, 3, 3, 2}, {2}, {2}}, [none](const Scope& s, const In& x) {
                 return ops::FusedBatchNorm(s, x[0], x[1], x[2], none, none).y;
               }});
  // Every output at once, each weighted differently: the gradients arriving
  // at the statistics outputs add to dx.
  c.push_back({"FusedBatchNorm", {{1, 5, 5, 2}, {2}, {2}}, [none](const Scope& s, const In& x) {
                 auto bn = ops::FusedBatchNorm(s, x[0], x[1], x[2], none, none, {.epsilon = 0.01});
                 Output stats = ops::AddN(s, {ops::Mul(s, bn.batch_mean, 0.7),
                                              ops::Mul(s, bn.batch_variance, 1.3),
                                              ops::Mul(s, bn.reserve_space_1, -0.4),
                                              ops::Mul(s, bn.reserve_space_2, 0.9)});
                 return ops::Add(s, bn.y, stats);
               }});
  c.push_back({"FusedBatchNorm", {{2, 4, 6, 3}, {3}, {3}}, [](const Scope& s, const In& x) {
                 auto mean = Tensor::FromVector<double>({0.2, -0.1, 0.3});
                 auto var = Tensor::FromVector<double>({0.5, 1.3, 0.8});
                 return ops::FusedBatchNorm(s, x[0], x[1], x[2], mean, var,
                                            {.is_training = false}).y;
               }});
}

// Linear maps: each case checks one coordinate mode; the Grad ops' rules
// are the forward resizes.
void AddResizeCases(std::vector<GradCase>& c) {
  const std::vector<ops::ResizeAttrs> modes = {{false, true}, {true, false}, {false, false}};
  for (const ops::ResizeAttrs& m : modes) {
    c.push_back({"ResizeNearestNeighbor", {{1, 3, 4, 2}}, [m](const Scope& s, const In& x) {
                   return ops::ResizeNearestNeighbor(s, x[0], {5, 3}, m);
                 }});
    c.push_back({"ResizeBilinear", {{2, 4, 3, 1}}, [m](const Scope& s, const In& x) {
                   return ops::ResizeBilinear(s, x[0], {2, 5}, m);
                 }});
    c.push_back({"ResizeNearestNeighborGrad", {{1, 5, 3, 2}}, [m](const Scope& s, const In& x) {
                   return ops::ResizeNearestNeighborGrad(s, x[0], {3, 4}, m);
                 }});
    c.push_back({"ResizeBilinearGrad", {{2, 2, 5, 1}}, [m](const Scope& s, const In& x) {
                   Tensor original = Tensor::Zeros(DType::kFloat64, {2, 4, 3, 1});
                   return ops::ResizeBilinearGrad(s, x[0], original, m);
                 }});
  }
}

}  // namespace

void AddCnnCases(std::vector<GradCase>& cases) {
  AddPoolCases(cases);
  AddBiasCases(cases);
  AddBatchNormCases(cases);
  AddResizeCases(cases);
}

}  // namespace dflow::testing

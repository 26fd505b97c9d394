// Softmax, LogSoftmax and the softmax cross-entropy losses against naive
// loops in double (with the stable log-sum-exp), including huge logits,
// zero-size shapes and bad labels.
#include <catch2/catch.hpp>

#include <cmath>

#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

// log(sum_j exp(x[j])) over one row of doubles.
double LogSumExp(const double* x, int64_t n) {
  double max = -INFINITY;
  for (int64_t j = 0; j < n; ++j) max = std::max(max, x[j]);
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += std::exp(x[j] - max);
  return max + std::log(sum);
}

Tensor ReferenceSoftmax(const Tensor& logits, bool log) {
  Tensor x = logits.CastTo(DType::kFloat64);
  Tensor out(DType::kFloat64, x.shape());
  int64_t cols = x.dim(x.rank() - 1);
  for (int64_t r = 0; cols > 0 && r < x.NumElements() / cols; ++r) {
    const double* row = x.data<double>() + r * cols;
    double lse = LogSumExp(row, cols);
    for (int64_t j = 0; j < cols; ++j)
      out.data<double>()[r * cols + j] = log ? row[j] - lse : std::exp(row[j] - lse);
  }
  return out.CastTo(logits.dtype());
}

// loss[b] = sum_c p[b,c] * (lse_b - x[b,c]); backprop = softmax(x) - p.
std::pair<Tensor, Tensor> ReferenceCrossEntropy(const Tensor& features, const Tensor& labels) {
  Tensor x = features.CastTo(DType::kFloat64), p = labels.CastTo(DType::kFloat64);
  int64_t batch = x.dim(0), classes = x.dim(1);
  Tensor loss(DType::kFloat64, {batch}), backprop(DType::kFloat64, x.shape());
  for (int64_t b = 0; b < batch; ++b) {
    const double* row = x.data<double>() + b * classes;
    const double* label = p.data<double>() + b * classes;
    double lse = LogSumExp(row, classes), total = 0;
    for (int64_t c = 0; c < classes; ++c) {
      total += label[c] * (lse - row[c]);
      backprop.data<double>()[b * classes + c] = std::exp(row[c] - lse) - label[c];
    }
    loss.data<double>()[b] = total;
  }
  return {loss.CastTo(features.dtype()), backprop.CastTo(features.dtype())};
}

Tensor OneHot(const Tensor& labels, int64_t classes, DType dtype) {
  Tensor out = Tensor::Zeros(DType::kFloat64, {labels.NumElements(), classes});
  for (int64_t b = 0; b < labels.NumElements(); ++b)
    out.data<double>()[b * classes + static_cast<int64_t>(ReadAsDouble(labels, b))] = 1;
  return out.CastTo(dtype);
}

// Random rows that are probability distributions.
Tensor RandomDistributions(DType dtype, int64_t batch, int64_t classes, uint64_t seed) {
  Tensor p = RandomTensor(DType::kFloat64, {batch, classes}, seed, 0, 1);
  for (int64_t b = 0; b < batch; ++b) {
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += p.data<double>()[b * classes + c];
    for (int64_t c = 0; c < classes; ++c) p.data<double>()[b * classes + c] /= sum;
  }
  return p.CastTo(dtype);
}

double Tol(DType dtype) { return dtype == DType::kFloat32 ? 2e-5 : 1e-12; }

void ExpectFinite(const Tensor& t) {
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    INFO("element " << i << " of " << t.SummaryString());
    CHECK(std::isfinite(ReadAsDouble(t, i)));
  }
}

}  // namespace

TEST_CASE("Softmax and LogSoftmax match naive loops", "[softmax]") {
  const Shape shapes[] = {{1}, {7}, {3, 5}, {2, 3, 4}, {4, 1}, {129, 33}, {0, 5}, {3, 0}, {2000, 50}};
  uint64_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat64})
    for (const Shape& shape : shapes)
      for (bool log : {false, true}) {
        Tensor x = RandomTensor(dtype, shape, seed++, -5, 5);
        INFO((log ? "LogSoftmax " : "Softmax ") << x.SummaryString());
        Tensor got = RunOp1({.op = log ? "LogSoftmax" : "Softmax", .inputs = {x}});
        ExpectClose(got, ReferenceSoftmax(x, log), Tol(dtype), Tol(dtype));
      }
}

TEST_CASE("Softmax stays finite for huge logits", "[softmax]") {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    Tensor x = RandomTensor(dtype, {6, 9}, 3, -1e4, 1e4);
    Tensor big = Tensor::FromVector<double>({1e4, 1e4 - 1, -1e4, 1e4, 1e4, 1e4}, {2, 3}).CastTo(dtype);
    for (const Tensor& logits : {x, big}) {
      Tensor soft = RunOp1({.op = "Softmax", .inputs = {logits}});
      Tensor log_soft = RunOp1({.op = "LogSoftmax", .inputs = {logits}});
      ExpectFinite(soft);
      ExpectFinite(log_soft);
      ExpectClose(soft, ReferenceSoftmax(logits, false), Tol(dtype), Tol(dtype));
      // Log-probabilities here reach -2e4: compare relative to that size.
      ExpectClose(log_soft, ReferenceSoftmax(logits, true), Tol(dtype), Tol(dtype));
    }
    Tensor soft = RunOp1({.op = "Softmax", .inputs = {big}});
    ExpectClose(soft, Tensor::FromVector<double>({0.7310585786300049, 0.2689414213699951, 0,
                                                  1.0 / 3, 1.0 / 3, 1.0 / 3}, {2, 3}).CastTo(dtype),
                1e-6, 1e-7);
  }
}

TEST_CASE("Softmax rejects scalars", "[softmax]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, Shape{});
  ExpectError([&] { ops::Softmax(s.WithOpName("sm"), x); }, Code::kInvalidArgument, "rank >= 1");
  auto i = ops::Placeholder(s.WithOpName("i"), DType::kInt32, {3});
  ExpectError([&] { ops::LogSoftmax(s, i); }, Code::kInvalidArgument, "int32");
}

TEST_CASE("SoftmaxCrossEntropyWithLogits matches a naive loop", "[softmax]") {
  uint64_t seed = 10;
  const int64_t sizes[][2] = {{1, 1}, {4, 3}, {7, 10}, {300, 129}, {0, 4}, {3, 0}};
  for (DType dtype : {DType::kFloat32, DType::kFloat64})
    for (auto& size : sizes) {
      Tensor features = RandomTensor(dtype, {size[0], size[1]}, seed++, -4, 4);
      Tensor labels = RandomDistributions(dtype, size[0], size[1], seed++);
      INFO(features.SummaryString());
      auto out = RunOp({.op = "SoftmaxCrossEntropyWithLogits", .inputs = {features, labels}});
      auto [loss, backprop] = ReferenceCrossEntropy(features, labels);
      ExpectClose(out[0], loss, Tol(dtype), Tol(dtype));
      ExpectClose(out[1], backprop, Tol(dtype), Tol(dtype));
    }
}

TEST_CASE("SparseSoftmaxCrossEntropyWithLogits matches the dense form with one-hot labels", "[softmax]") {
  uint64_t seed = 20;
  const int64_t sizes[][2] = {{1, 1}, {5, 3}, {8, 17}, {513, 40}, {0, 4}};
  for (DType dtype : {DType::kFloat32, DType::kFloat64})
    for (DType label_type : {DType::kInt32, DType::kInt64})
      for (auto& size : sizes) {
        Tensor features = RandomTensor(dtype, {size[0], size[1]}, seed++, -4, 4);
        Tensor labels = RandomTensor(label_type, {size[0]}, seed++, -0.49, size[1] - 0.51);
        INFO(features.SummaryString() << " labels " << labels.DebugString());
        auto out = RunOp({.op = "SparseSoftmaxCrossEntropyWithLogits", .inputs = {features, labels}});
        auto [loss, backprop] = ReferenceCrossEntropy(features, OneHot(labels, size[1], dtype));
        ExpectClose(out[0], loss, Tol(dtype), Tol(dtype));
        ExpectClose(out[1], backprop, Tol(dtype), Tol(dtype));
      }
}

TEST_CASE("cross entropy stays finite for huge logits", "[softmax]") {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    Tensor features = RandomTensor(dtype, {5, 7}, 30, -1e4, 1e4);
    Tensor labels = Tensor::FromVector<int64_t>({0, 6, 3, 2, 1});
    auto sparse = RunOp({.op = "SparseSoftmaxCrossEntropyWithLogits", .inputs = {features, labels}});
    auto dense = RunOp({.op = "SoftmaxCrossEntropyWithLogits",
                        .inputs = {features, OneHot(labels, 7, dtype)}});
    auto [loss, backprop] = ReferenceCrossEntropy(features, OneHot(labels, 7, dtype));
    for (const auto& out : {sparse, dense}) {
      ExpectFinite(out[0]);
      ExpectFinite(out[1]);
      ExpectClose(out[0], loss, Tol(dtype), Tol(dtype));
      ExpectClose(out[1], backprop, Tol(dtype), Tol(dtype));
    }
  }
}

TEST_CASE("cross entropy reports bad labels and shapes", "[softmax]") {
  Tensor features = RandomTensor(DType::kFloat32, {4, 3}, 1);
  ExpectError([&] {
    RunOp({.op = "SparseSoftmaxCrossEntropyWithLogits",
           .inputs = {features, Tensor::FromVector<int32_t>({0, 2, 5, 1})}});
  }, Code::kInvalidArgument, "label value 5 at index 2 is outside the valid range of classes [0, 3)");
  ExpectError([&] {
    RunOp({.op = "SparseSoftmaxCrossEntropyWithLogits",
           .inputs = {features, Tensor::FromVector<int64_t>({0, -1, 2, 1})}});
  }, Code::kInvalidArgument, "label value -1 at index 1");
  ExpectError([&] {
    RunOp({.op = "SparseSoftmaxCrossEntropyWithLogits",
           .inputs = {features, Tensor::FromVector<int64_t>({0, 1, 2})}});
  }, Code::kInvalidArgument, "features [4,3] and labels [3] differ in batch size");
  ExpectError([&] {
    RunOp({.op = "SoftmaxCrossEntropyWithLogits",
           .inputs = {features, RandomDistributions(DType::kFloat32, 4, 2, 1)}});
  }, Code::kInvalidArgument, "features [4,3] and labels [4,2] must have the same shape");
  ExpectError([&] {
    RunOp({.op = "SoftmaxCrossEntropyWithLogits",
           .inputs = {RandomTensor(DType::kFloat32, {12}, 1), RandomTensor(DType::kFloat32, {12}, 1)}});
  }, Code::kInvalidArgument, "features must be [batch, classes]");
  // Shapes known only at run time are checked by the kernels.
  Scope s = Scope::NewRootScope();
  auto f = ops::Placeholder(s.WithOpName("f"), DType::kFloat32);
  auto l = ops::Placeholder(s.WithOpName("l"), DType::kFloat32);
  auto dense = ops::SoftmaxCrossEntropyWithLogits(s.WithOpName("xent"), f, l);
  Session session(s);
  ExpectError([&] { session.Run({{f, features}, {l, RandomDistributions(DType::kFloat32, 3, 3, 2)}},
                                {dense.loss}); },
              Code::kInvalidArgument, "must have the same shape");
}

TEST_CASE("sparse cross entropy builder keeps literal labels as integers", "[softmax]") {
  Scope s = Scope::NewRootScope();
  auto logits = ops::Const(s.WithOpName("logits"),
                           Tensor::FromVector<double>({0, 0, 0, 0}, {2, 2}));
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(s.WithOpName("xent"), logits, {1, 0});
  CHECK(xent.loss.node()->input_dtype(1) == DType::kInt32);
  CHECK(xent.loss.shape() == Shape({2}));
  CHECK(xent.backprop.shape() == Shape({2, 2}));
  Session session(s);
  auto out = session.Run({xent.loss, xent.backprop});
  ExpectClose(out[0], Tensor::FromVector<double>({std::log(2.0), std::log(2.0)}));
  ExpectClose(out[1], Tensor::FromVector<double>({0.5, -0.5, -0.5, 0.5}, {2, 2}));
}

// FusedBatchNorm (training and inference, all five outputs including the
// unbiased batch variance) and FusedBatchNormGrad against naive
// double-precision references; float32 statistics of data far from zero;
// shape errors naming the node; the moving-average update.
#include <cmath>

#include <catch2/catch.hpp>

#include "ops/batch_norm.h"
#include "ops/state.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

constexpr double kEpsilon = 0.001;

struct Stats {
  std::vector<double> mean, var;  // biased variance
};

Stats BatchStats(const Tensor& x) {
  int64_t c_count = x.dim(3), m = x.NumElements() / c_count;
  Stats s{std::vector<double>(c_count, 0), std::vector<double>(c_count, 0)};
  for (int64_t i = 0; i < x.NumElements(); ++i) s.mean[i % c_count] += ReadAsDouble(x, i) / m;
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    double d = ReadAsDouble(x, i) - s.mean[i % c_count];
    s.var[i % c_count] += d * d / m;
  }
  return s;
}

Tensor Vec(const std::vector<double>& v, DType dtype) { return Tensor::FromVector(v).CastTo(dtype); }
std::vector<double> Doubles(const Tensor& t) { return t.CastTo(DType::kFloat64).ToVector<double>(); }

// y = scale * (x - mean) / sqrt(var + eps) + offset
Tensor Normalize(const Tensor& x, const Stats& s, const Tensor& scale, const Tensor& offset) {
  Tensor y(DType::kFloat64, x.shape());
  int64_t c_count = x.dim(3);
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    int64_t c = i % c_count;
    y.data<double>()[i] = ReadAsDouble(scale, c) * (ReadAsDouble(x, i) - s.mean[c]) /
                              std::sqrt(s.var[c] + kEpsilon) + ReadAsDouble(offset, c);
  }
  return y.CastTo(x.dtype());
}

// dx, dscale, doffset from the textbook formulas.
std::vector<Tensor> GradRef(const Tensor& dy, const Tensor& x, const Tensor& scale, const Stats& s,
                            bool training) {
  int64_t c_count = x.dim(3);
  double m = static_cast<double>(x.NumElements() / c_count);
  std::vector<double> sum_dy(c_count, 0), sum_dy_xhat(c_count, 0);
  auto xhat = [&](int64_t i) {
    int64_t c = i % c_count;
    return (ReadAsDouble(x, i) - s.mean[c]) / std::sqrt(s.var[c] + kEpsilon);
  };
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    sum_dy[i % c_count] += ReadAsDouble(dy, i);
    sum_dy_xhat[i % c_count] += ReadAsDouble(dy, i) * xhat(i);
  }
  Tensor dx(DType::kFloat64, x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    int64_t c = i % c_count;
    double k = ReadAsDouble(scale, c) / std::sqrt(s.var[c] + kEpsilon);
    double g = ReadAsDouble(dy, i);
    dx.data<double>()[i] = training ? k / m * (m * g - sum_dy[c] - xhat(i) * sum_dy_xhat[c]) : k * g;
  }
  return {dx.CastTo(x.dtype()), Vec(sum_dy_xhat, x.dtype()), Vec(sum_dy, x.dtype())};
}

AttrMap Attrs(bool training) { return {{"epsilon", kEpsilon}, {"is_training", training}}; }

const std::vector<Shape> kShapes = {{1, 5, 5, 1}, {3, 5, 3, 5}, {1, 1, 1, 5}, {3, 7, 1, 1},
                                    {2, 4, 6, 3}};

}  // namespace

TEST_CASE("FusedBatchNorm in training mode matches the reference", "[batch_norm]") {
  uint64_t seed = 21;
  for (DType dtype : {DType::kFloat32, DType::kFloat64})
    for (const Shape& shape : kShapes) {
      INFO(DTypeName(dtype) << shape.ToString());
      Tensor x = RandomTensor(dtype, shape, seed++, -2, 3);
      Tensor scale = RandomTensor(dtype, {shape.dim(3)}, seed++, 0.5, 2);
      Tensor offset = RandomTensor(dtype, {shape.dim(3)}, seed++);
      Tensor unused = Tensor::Zeros(dtype, {0});  // training does not read mean/variance
      auto out = RunOp({.op = "FusedBatchNorm", .inputs = {x, scale, offset, unused, unused},
                        .attrs = Attrs(true)});
      Stats s = BatchStats(x);
      double m = static_cast<double>(x.NumElements() / shape.dim(3));
      std::vector<double> unbiased = s.var;
      for (double& v : unbiased) v *= m > 1 ? m / (m - 1) : 1;
      double tol = dtype == DType::kFloat32 ? 2e-5 : 1e-12;
      ExpectClose(out[0], Normalize(x, s, scale, offset), tol, tol);
      ExpectClose(out[1], Vec(s.mean, dtype), tol, tol);
      ExpectClose(out[2], Vec(unbiased, dtype), tol, tol);
      ExpectClose(out[3], Vec(s.mean, dtype), tol, tol);
      ExpectClose(out[4], Vec(s.var, dtype), tol, tol);
    }
}

TEST_CASE("FusedBatchNorm in inference mode uses and passes through mean and variance",
          "[batch_norm]") {
  uint64_t seed = 51;
  for (DType dtype : {DType::kFloat32, DType::kFloat64})
    for (const Shape& shape : kShapes) {
      INFO(DTypeName(dtype) << shape.ToString());
      int64_t c = shape.dim(3);
      Tensor x = RandomTensor(dtype, shape, seed++, -2, 3);
      Tensor scale = RandomTensor(dtype, {c}, seed++, 0.5, 2);
      Tensor offset = RandomTensor(dtype, {c}, seed++);
      Tensor mean = RandomTensor(dtype, {c}, seed++);
      Tensor var = RandomTensor(dtype, {c}, seed++, 0.2, 3);
      auto out = RunOp({.op = "FusedBatchNorm", .inputs = {x, scale, offset, mean, var},
                        .attrs = Attrs(false)});
      double tol = dtype == DType::kFloat32 ? 2e-5 : 1e-12;
      ExpectClose(out[0], Normalize(x, {Doubles(mean), Doubles(var)}, scale, offset), tol, tol);
      for (int i : {1, 3}) ExpectEqual(out[i], mean);
      for (int i : {2, 4}) ExpectEqual(out[i], var);
    }
}

TEST_CASE("FusedBatchNorm float32 statistics stay accurate far from zero", "[batch_norm]") {
  // 2^18 values per channel around 1000 with spread 1: double sums.
  Tensor x = RandomTensor(DType::kFloat32, {16, 128, 128, 2}, 5, 999, 1001);
  Tensor ones = Tensor::FromVector<float>({1, 1}), zeros = Tensor::FromVector<float>({0, 0});
  auto out = RunOp({.op = "FusedBatchNorm", .inputs = {x, ones, zeros, zeros, ones},
                    .attrs = Attrs(true)});
  Stats s = BatchStats(x);
  ExpectClose(out[1], Vec(s.mean, DType::kFloat32), 1e-7, 0);
  ExpectClose(out[4], Vec(s.var, DType::kFloat32), 1e-5, 0);
}

TEST_CASE("FusedBatchNorm one-pass statistics survive a mean 1e9 times the spread",
          "[batch_norm]") {
  // Unshifted, E[x^2] - E[x]^2 would subtract two sums of ~1e18 in double
  // (ulp ~128) to find a variance of ~1/3; shifted by a sample it keeps ~9
  // digits.
  Tensor x = RandomTensor(DType::kFloat64, {4, 33, 17, 3}, 9, 1e9 - 1, 1e9 + 1);
  Tensor ones = Tensor::FromVector<double>({1, 1, 1}), zeros = Tensor::FromVector<double>({0, 0, 0});
  auto out = RunOp({.op = "FusedBatchNorm", .inputs = {x, ones, zeros, zeros, ones},
                    .attrs = Attrs(true)});
  Stats s = BatchStats(x);
  ExpectClose(out[1], Vec(s.mean, DType::kFloat64), 1e-13, 0);  // the reference sums ~1e9 / M terms
  ExpectClose(out[4], Vec(s.var, DType::kFloat64), 1e-6, 0);
}

TEST_CASE("FusedBatchNormGrad matches the reference", "[batch_norm]") {
  uint64_t seed = 81;
  for (bool training : {true, false})
    for (DType dtype : {DType::kFloat32, DType::kFloat64})
      for (const Shape& shape : kShapes) {
        INFO(DTypeName(dtype) << shape.ToString() << (training ? " training" : " inference"));
        int64_t c = shape.dim(3);
        Tensor x = RandomTensor(dtype, shape, seed++, -2, 3);
        Tensor dy = RandomTensor(dtype, shape, seed++);
        Tensor scale = RandomTensor(dtype, {c}, seed++, 0.5, 2);
        Stats s = training ? BatchStats(x) : Stats{Doubles(RandomTensor(dtype, {c}, seed++)),
                                                   Doubles(RandomTensor(dtype, {c}, seed++, 0.2, 3))};
        auto out = RunOp({.op = "FusedBatchNormGrad",
                          .inputs = {dy, x, scale, Vec(s.mean, dtype), Vec(s.var, dtype)},
                          .attrs = Attrs(training)});
        // The reference sees the statistics rounded to dtype, as the op does.
        Stats rounded{Doubles(Vec(s.mean, dtype)), Doubles(Vec(s.var, dtype))};
        auto expected = GradRef(dy, x, scale, rounded, training);
        double tol = dtype == DType::kFloat32 ? 1e-4 : 1e-10;
        for (int i = 0; i < 3; ++i) ExpectClose(out[i], expected[i], tol, tol);
      }
}

TEST_CASE("batch norm rejects bad shapes, naming the node", "[batch_norm]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2, 3, 3, 2});
  auto x3 = ops::Placeholder(s.WithOpName("x3"), DType::kFloat32, {3, 3, 2});
  auto c2 = ops::Placeholder(s.WithOpName("c2"), DType::kFloat32, {2});
  auto c3 = ops::Placeholder(s.WithOpName("c3"), DType::kFloat32, {3});
  auto empty = ops::Placeholder(s.WithOpName("empty"), DType::kFloat32, {0});
  ExpectError([&] { ops::FusedBatchNorm(s.WithOpName("bn1"), x3, c2, c2, c2, c2); },
              Code::kInvalidArgument, "FusedBatchNorm 'bn1': x must be NHWC (rank 4), got [3,3,2]");
  ExpectError([&] { ops::FusedBatchNorm(s.WithOpName("bn2"), x, c3, c2, c2, c2); },
              Code::kInvalidArgument,
              "FusedBatchNorm 'bn2': scale has 3 elements, expected one per channel (2)");
  ExpectError([&] { ops::FusedBatchNorm(s.WithOpName("bn3"), x, c2, c2, empty, c2,
                                        {.is_training = false}); },
              Code::kInvalidArgument, "FusedBatchNorm 'bn3': mean has 0 elements");
  ExpectError([&] { ops::FusedBatchNormGrad(s.WithOpName("bng"), x3, x, c2, c2, c2); },
              Code::kInvalidArgument, "FusedBatchNormGrad 'bng': y_backprop must be NHWC");
  // Known only at run time: the kernel checks.
  auto any = ops::Placeholder(s.WithOpName("any"), DType::kFloat32);
  auto late = ops::FusedBatchNorm(s.WithOpName("late"), x, any, c2, c2, c2);
  Tensor two = Tensor::Zeros(DType::kFloat32, {2});
  ExpectError([&] { Session(s).Run({{x, Tensor::Zeros(DType::kFloat32, {2, 3, 3, 2})},
                                    {any, Tensor::Zeros(DType::kFloat32, {4})},
                                    {c2, two}}, {late.y}); },
              Code::kInvalidArgument, "FusedBatchNorm 'late': scale must have one element per channel");
}

TEST_CASE("AssignMovingAverage moves the variable toward the value", "[batch_norm]") {
  Scope s = Scope::NewRootScope();
  auto var = ops::Variable(s.WithOpName("moving_mean"), Tensor::FromVector<float>({1, 2}));
  auto update = ops::AssignMovingAverage(s.WithOpName("update"), var, {3.0f, 6.0f}, 0.9);
  Session session(s);
  session.Run({}, {}, {ops::GlobalVariablesInitializer(s)});
  // v - 0.1 (v - value) = 0.9 v + 0.1 value
  ExpectClose(session.Run({update})[0], Tensor::FromVector<float>({1.2f, 2.4f}), 1e-6, 1e-6);
  ExpectClose(session.Run({update})[0], Tensor::FromVector<float>({1.38f, 2.76f}), 1e-6, 1e-6);
  ExpectClose(session.Run({var})[0], Tensor::FromVector<float>({1.38f, 2.76f}), 1e-6, 1e-6);
}

// Random ops: reproducible with seeds, fresh numbers per run, right statistics.
#include <catch2/catch.hpp>
#include <cmath>

#include "ops/random.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;

namespace {

// Draws `runs` times from a fresh session over a graph with the given seeds.
std::vector<Tensor> Draw(const char* op, DType dtype, int64_t graph_seed, int64_t op_seed, int runs,
                         Shape shape = {1000}) {
  Scope s = Scope::NewRootScope();
  s.graph().set_seed(graph_seed);
  std::vector<int64_t> dims = shape.dims();
  Tensor shape_value = Tensor::FromVector(dims);
  Output out;
  if (std::string(op) == "RandomUniform") out = ops::RandomUniform(s, shape_value, dtype, {op_seed});
  else if (std::string(op) == "RandomStandardNormal") out = ops::RandomStandardNormal(s, shape_value, dtype, {op_seed});
  else out = ops::TruncatedNormal(s, shape_value, dtype, {op_seed});
  Session session(s);
  std::vector<Tensor> results;
  for (int i = 0; i < runs; ++i) results.push_back(session.Run({out})[0]);
  return results;
}

std::pair<double, double> MeanVariance(const Tensor& t) {
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < t.NumElements(); ++i) sum += ReadAsDouble(t, i);
  double mean = sum / t.NumElements();
  for (int64_t i = 0; i < t.NumElements(); ++i) sq += std::pow(ReadAsDouble(t, i) - mean, 2);
  return {mean, sq / t.NumElements()};
}

}  // namespace

TEST_CASE("seeded random ops repeat across sessions and change across runs", "[random]") {
  for (const char* op : {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"}) {
    INFO(op);
    auto a = Draw(op, DType::kFloat32, 42, 7, 2);
    auto b = Draw(op, DType::kFloat32, 42, 7, 2);
    CHECK(a[0].Equals(b[0]));
    CHECK(a[1].Equals(b[1]));
    CHECK_FALSE(a[0].Equals(a[1]));
    CHECK_FALSE(a[0].Equals(Draw(op, DType::kFloat32, 42, 8, 1)[0]));
    // A graph seed alone is enough for reproducibility.
    CHECK(Draw(op, DType::kFloat64, 5, 0, 1)[0].Equals(Draw(op, DType::kFloat64, 5, 0, 1)[0]));
  }
}

TEST_CASE("unseeded random ops differ between sessions", "[random]") {
  CHECK_FALSE(Draw("RandomUniform", DType::kFloat32, 0, 0, 1)[0].Equals(
      Draw("RandomUniform", DType::kFloat32, 0, 0, 1)[0]));
}

TEST_CASE("random values have the right distribution", "[random]") {
  // 100k samples: the standard error of the mean is ~0.003, so these bounds
  // hold for any seed with overwhelming probability; the seeds are fixed anyway.
  Shape big{100, 1000};
  auto uniform = Draw("RandomUniform", DType::kFloat64, 1, 1, 1, big)[0];
  auto [um, uv] = MeanVariance(uniform);
  CHECK(std::abs(um - 0.5) < 0.01);
  CHECK(std::abs(uv - 1.0 / 12) < 0.01);
  int outside = 0;
  for (double v : uniform.flat<double>()) outside += !(v >= 0 && v < 1);
  CHECK(outside == 0);

  auto normal = Draw("RandomStandardNormal", DType::kFloat32, 1, 2, 1, big)[0];
  auto [nm, nv] = MeanVariance(normal);
  CHECK(std::abs(nm) < 0.02);
  CHECK(std::abs(nv - 1) < 0.02);

  auto truncated = Draw("TruncatedNormal", DType::kFloat32, 1, 3, 1, big)[0];
  auto [tm, tv] = MeanVariance(truncated);
  int beyond = 0;
  for (float v : truncated.flat<float>()) beyond += std::abs(v) > 2.0f;
  CHECK(beyond == 0);
  CHECK(std::abs(tm) < 0.02);
  CHECK(std::abs(tv - 0.774) < 0.02);  // variance of N(0,1) truncated to [-2, 2]
}

TEST_CASE("random ops check their shape input", "[random]") {
  auto shape = Tensor::FromVector<int32_t>({2, 3});
  Tensor out = testing::RunOp1({.op = "RandomUniform", .inputs = {shape}, .attrs = {{"dtype", DType::kFloat32}}, .const_inputs = {0}});
  CHECK(out.shape() == Shape({2, 3}));
  auto empty = testing::RunOp1({.op = "RandomStandardNormal", .inputs = {Tensor::FromVector<int64_t>({0, 4})}, .attrs = {{"dtype", DType::kFloat64}}});
  CHECK(empty.NumElements() == 0);
  testing::ExpectError([&] {
    testing::RunOp1({.op = "RandomUniform", .inputs = {Tensor::FromVector<int32_t>({2, -3})}, .attrs = {{"dtype", DType::kFloat32}}});
  }, Code::kInvalidArgument, "negative dimension");
  testing::ExpectError([&] {
    testing::RunOp1({.op = "RandomUniform", .inputs = {Tensor::FromVector<int32_t>({2})}, .attrs = {{"dtype", DType::kInt32}}});
  }, Code::kInvalidArgument, "not allowed");
}

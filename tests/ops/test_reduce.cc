// Sum, Mean, Max, Min, Prod, ArgMax and ArgMin against naive loops in double
// on random shapes and axis sets: negative and repeated axes, keep_dims,
// scalars, zero-size dims, big inputs that take the parallel paths, errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

// The reduced value of each output element, folding the input in order.
Tensor ReferenceReduce(const std::string& op, const Tensor& input, const std::vector<int64_t>& axes,
                       bool keep_dims) {
  int rank = input.rank();
  std::vector<bool> mask(rank, false);
  for (int64_t a : axes) mask[a < 0 ? a + rank : a] = true;
  std::vector<int64_t> kept_dims, out_dims;
  int64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    kept_dims.push_back(mask[i] ? 1 : input.dim(i));
    if (mask[i]) count *= input.dim(i);
    if (!mask[i] || keep_dims) out_dims.push_back(mask[i] ? 1 : input.dim(i));
  }
  bool is_int = IsInteger(input.dtype());
  double init = op == "Sum" || op == "Mean" ? 0
                : op == "Prod"              ? 1
                : op == "Max"               ? -INFINITY
                                            : INFINITY;
  if (is_int && count == 0 && (op == "Max" || op == "Min")) init = 0;  // set below
  Tensor out(DType::kFloat64, Shape(kept_dims));
  for (double& v : out.flat<double>()) v = init;
  std::vector<int64_t> in_strides = Strides(input.shape()), out_strides = Strides(Shape(kept_dims));
  for (int64_t flat = 0; flat < input.NumElements(); ++flat) {
    int64_t o = 0;
    for (int i = 0; i < rank; ++i)
      if (!mask[i]) o += (flat / in_strides[i] % input.dim(i)) * out_strides[i];
    double x = ReadAsDouble(input, flat), &acc = out.data<double>()[o];
    if (op == "Sum" || op == "Mean") acc += x;
    else if (op == "Prod") acc *= x;
    else if (op == "Max") acc = (std::isnan(x) || x > acc) ? x : acc;
    else acc = (std::isnan(x) || x < acc) ? x : acc;
  }
  for (double& v : out.flat<double>())
    if (op == "Mean") v = !is_int ? v / count : count == 0 ? 0 : std::trunc(v / count);
  Tensor result = out.Reshaped(Shape(out_dims)).CastTo(input.dtype());
  // An empty integer Max/Min is the type's lowest/highest value.
  if (is_int && count == 0 && (op == "Max" || op == "Min")) {
    for (int64_t i = 0; i < result.NumElements(); ++i) {
      if (input.dtype() == DType::kInt32)
        result.data<int32_t>()[i] = op == "Max" ? INT32_MIN : INT32_MAX;
      else
        result.data<int64_t>()[i] = op == "Max" ? INT64_MIN : INT64_MAX;
    }
  }
  return result;
}

Tensor RunReduce(const std::string& op, const Tensor& input, const Tensor& axis, bool keep_dims,
                 bool axis_const = true) {
  return RunOp1({.op = op, .inputs = {input, axis}, .attrs = {{"keep_dims", keep_dims}},
                 .const_inputs = axis_const ? std::set<int>{1} : std::set<int>{}});
}

// Values that keep every op exact enough: Prod near 1 (integers -1..1).
Tensor InputFor(const std::string& op, DType dtype, const Shape& shape, uint64_t seed) {
  if (op == "Prod") return IsInteger(dtype) ? RandomTensor(dtype, shape, seed, -1.4, 1.4)
                                            : RandomTensor(dtype, shape, seed, 0.8, 1.2);
  return RandomTensor(dtype, shape, seed, -9, 9);
}

void CheckReduce(const std::string& op, const Tensor& input, const std::vector<int64_t>& axes,
                 bool keep_dims, bool axis_const = true, double tol = 0) {
  INFO(op << " of " << input.SummaryString() << " over " << Tensor::FromVector(axes).DebugString()
          << " keep_dims=" << keep_dims);
  Tensor expected = ReferenceReduce(op, input, axes, keep_dims);
  if (op == "Mean" && IsInteger(input.dtype()) && input.NumElements() == 0 && expected.NumElements() > 0) {
    ExpectError([&] { RunReduce(op, input, Tensor::FromVector(axes), keep_dims, axis_const); },
                Code::kInvalidArgument, "mean of an empty set of integers");
    return;
  }
  Tensor got = RunReduce(op, input, Tensor::FromVector(axes), keep_dims, axis_const);
  if (tol == 0) tol = input.dtype() == DType::kFloat32 ? 2e-5 : 1e-12;
  ExpectClose(got, expected, tol, tol);
}

const char* const kReductions[] = {"Sum", "Mean", "Max", "Min", "Prod"};

}  // namespace

TEST_CASE("reductions match naive loops on random shapes and axes", "[reduce]") {
  std::mt19937 rng(42);
  const int64_t dim_choices[] = {1, 2, 3, 5, 7, 0};
  uint64_t seed = 1;
  for (int trial = 0; trial < 60; ++trial) {
    int rank = static_cast<int>(rng() % 5);
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) dims.push_back(dim_choices[rng() % (trial % 6 == 5 ? 6 : 5)]);
    std::vector<int64_t> axes;
    for (int i = 0; i < rank; ++i) {
      if (rng() % 2) axes.push_back(rng() % 2 ? i : i - rank);  // negative half the time
      if (rng() % 8 == 0) axes.push_back(i);                    // a repeat
    }
    std::shuffle(axes.begin(), axes.end(), rng);
    bool keep_dims = rng() % 2;
    DType dtype = std::vector<DType>{DType::kFloat32, DType::kFloat64, DType::kInt32,
                                     DType::kInt64}[trial % 4];
    for (const char* op : kReductions)
      CheckReduce(op, InputFor(op, dtype, Shape(dims), seed++), axes, keep_dims);
  }
}

TEST_CASE("reductions of scalars, empty axis lists and int64 axes", "[reduce]") {
  Tensor scalar = Tensor::Scalar<float>(2.5f);
  for (const char* op : kReductions) {
    CheckReduce(op, scalar, {}, false);
    CheckReduce(op, scalar, {}, true);
  }
  // An empty axis list reduces nothing, also for Mean.
  Tensor x = RandomTensor(DType::kFloat64, {3, 4}, 5);
  for (const char* op : kReductions) ExpectEqual(RunReduce(op, x, Tensor::FromVector<int32_t>({}), false), x);
  // A scalar axis, int64 axes, and an axis given at run time (unknown to shape inference).
  ExpectClose(RunReduce("Sum", x, Tensor::Scalar<int64_t>(-1), false), ReferenceReduce("Sum", x, {1}, false));
  ExpectClose(RunReduce("Max", x, Tensor::FromVector<int64_t>({1, 0}), true, false),
              ReferenceReduce("Max", x, {0, 1}, true));
  ExpectClose(RunReduce("Mean", x, Tensor::Scalar<int32_t>(0), false, false),
              ReferenceReduce("Mean", x, {0}, false));
}

TEST_CASE("reductions over empty sets follow TensorFlow", "[reduce]") {
  Tensor empty = Tensor::Zeros(DType::kFloat32, {0, 3});
  auto run = [&](const char* op) { return RunReduce(op, empty, Tensor::Scalar<int32_t>(0), false); };
  ExpectEqual(run("Sum"), Tensor::FromVector<float>({0, 0, 0}));
  ExpectEqual(run("Prod"), Tensor::FromVector<float>({1, 1, 1}));
  Tensor mean = run("Mean");
  for (float v : mean.flat<float>()) CHECK(std::isnan(v));
  ExpectEqual(run("Max"), Tensor::FromVector<float>({-INFINITY, -INFINITY, -INFINITY}));
  ExpectEqual(run("Min"), Tensor::FromVector<float>({INFINITY, INFINITY, INFINITY}));
  Tensor ints = Tensor::Zeros(DType::kInt32, {2, 0});
  ExpectEqual(RunReduce("Max", ints, Tensor::Scalar<int32_t>(1), false),
              Tensor::FromVector<int32_t>({INT32_MIN, INT32_MIN}));
  ExpectEqual(RunReduce("Min", ints, Tensor::Scalar<int32_t>(1), true),
              Tensor::FromVector<int32_t>({INT32_MAX, INT32_MAX}, {2, 1}));
  ExpectError([&] { RunReduce("Mean", ints, Tensor::Scalar<int32_t>(1), false); },
              Code::kInvalidArgument, "mean of an empty set of integers");
  // Reducing the non-empty dim of an empty tensor gives an empty result.
  ExpectEqual(RunReduce("Sum", empty, Tensor::Scalar<int32_t>(1), true), Tensor::Zeros(DType::kFloat32, {0, 1}));
}

TEST_CASE("Max and Min propagate NaN", "[reduce]") {
  Tensor x = Tensor::FromVector<double>({1, NAN, 3, 4, 5, 6}, {2, 3});
  Tensor max = RunReduce("Max", x, Tensor::Scalar<int32_t>(1), false);
  CHECK(std::isnan(max.data<double>()[0]));
  CHECK(max.data<double>()[1] == 6);
  Tensor min = RunReduce("Min", x, Tensor::Scalar<int32_t>(0), false);
  CHECK(min.data<double>()[0] == 1);
  CHECK(std::isnan(min.data<double>()[1]));
  CHECK(min.data<double>()[2] == 3);
  // Big inputs take the vectorised paths (rows, folded short columns, split chunks).
  for (Shape shape : {Shape{3, 40001}, Shape{40001, 3}, Shape{50, 7}}) {
    Tensor big = RandomTensor(DType::kFloat32, shape, 3);
    big.data<float>()[big.NumElements() / 2 + 1] = NAN;
    for (const char* op : {"Max", "Min"})
      for (int axis : {0, 1}) {
        INFO(op << " of " << big.SummaryString() << " over axis " << axis);
        ExpectClose(RunReduce(op, big, Tensor::Scalar<int32_t>(axis), false),
                    ReferenceReduce(op, big, {axis}, false));
      }
  }
}

TEST_CASE("reductions of big tensors take the parallel paths", "[reduce]") {
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
  };
  const Case cases[] = {
      {{300, 401}, {0}},      {{300, 401}, {1}},       {{300, 401}, {0, 1}},  {{2, 40001}, {1}},
      {{40001, 3}, {0}},      {{3, 40001}, {0}},       {{7, 903, 11}, {0, 2}}, {{7, 903, 11}, {1}},
      {{5, 6, 7, 8, 9}, {1, 3}}, {{100003}, {0}},
  };
  uint64_t seed = 77;
  for (const Case& c : cases) {
    // Positive values: a float sum of many terms is checked relative to its size.
    CheckReduce("Sum", RandomTensor(DType::kFloat32, c.shape, seed++, 0, 1), c.axes, false, true, 1e-4);
    CheckReduce("Max", RandomTensor(DType::kFloat32, c.shape, seed++), c.axes, true);
    CheckReduce("Mean", RandomTensor(DType::kFloat64, c.shape, seed++), c.axes, false);
    CheckReduce("Min", RandomTensor(DType::kInt32, c.shape, seed++, -1000, 1000), c.axes, false);
    CheckReduce("Prod", RandomTensor(DType::kInt64, c.shape, seed++, -1.4, 1.4), c.axes, false);
  }
}

TEST_CASE("integer Sum and Prod wrap around like TensorFlow", "[reduce]") {
  Tensor x = Tensor::FromVector<int32_t>({INT32_MAX, 1});
  ExpectEqual(RunReduce("Sum", x, Tensor::Scalar<int32_t>(0), false), Tensor::Scalar<int32_t>(INT32_MIN));
  Tensor y = Tensor::FromVector<int32_t>({65536, 65536});
  ExpectEqual(RunReduce("Prod", y, Tensor::Scalar<int32_t>(0), false), Tensor::Scalar<int32_t>(0));
}

TEST_CASE("reduction shapes are inferred from constant or unknown axes", "[reduce]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2, -1, 5});
  CHECK(ops::Sum(s, x, {0, -1}).shape() == Shape({-1}));
  CHECK(ops::Mean(s, x, 1, {.keep_dims = true}).shape() == Shape({2, 1, 5}));
  CHECK(ops::Prod(s, x, Tensor::FromVector<int32_t>({})).shape() == Shape({2, -1, 5}));
  auto axes = ops::Placeholder(s.WithOpName("axes"), DType::kInt32, {-1});
  auto scalar_axis = ops::Placeholder(s.WithOpName("axis"), DType::kInt64, Shape{});
  CHECK(ops::Max(s, x, axes, {.keep_dims = true}).shape() == Shape({-1, -1, -1}));
  CHECK(ops::Max(s, x, axes).shape().unknown_rank());
  CHECK(ops::Min(s, x, scalar_axis).shape() == Shape({-1, -1}));
  // A literal float input keeps its dtype next to the int axis.
  auto lit = ops::Sum(s.WithOpName("lit"), Tensor::FromVector<float>({1, 2, 3}), 0);
  CHECK(lit.dtype() == DType::kFloat32);
  Session session(s);
  ExpectEqual(session.Run({lit})[0], Tensor::Scalar<float>(6));
}

TEST_CASE("reductions report bad axes", "[reduce]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2, 3});
  ExpectError([&] { ops::Sum(s.WithOpName("sum"), x, 2); }, Code::kInvalidArgument,
              "axis 2 is out of range for a tensor of shape [2,3]");
  ExpectError([&] { ops::Sum(s, x, {0, -3}); }, Code::kInvalidArgument, "axis -3 is out of range");
  ExpectError([&] { ops::Sum(s, x, Tensor::FromVector<int32_t>({0, 1}, {1, 2})); },
              Code::kInvalidArgument, "axis must be a scalar or a vector");
  ExpectError([&] { ops::Sum(s, x, 1.5f); }, Code::kInvalidArgument, "Tidx=float32 is not allowed");
  auto axes = ops::Placeholder(s.WithOpName("axes"), DType::kInt32, {-1});
  auto late = ops::Mean(s.WithOpName("late"), x, axes);
  Session session(s);
  ExpectError([&] {
    session.Run({{x, Tensor::Zeros(DType::kFloat32, {2, 3})}, {axes, Tensor::FromVector<int32_t>({5})}},
                {late});
  }, Code::kInvalidArgument, "axis 5 is out of range");
}

namespace {

Tensor ReferenceArg(const Tensor& input, int axis, bool is_max, DType output_type) {
  int64_t outer = 1, n = input.dim(axis), inner = 1;
  std::vector<int64_t> out_dims;
  for (int i = 0; i < input.rank(); ++i) {
    if (i < axis) outer *= input.dim(i);
    if (i > axis) inner *= input.dim(i);
    if (i != axis) out_dims.push_back(input.dim(i));
  }
  Tensor out(DType::kFloat64, Shape(out_dims));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      int64_t best = 0;
      for (int64_t i = 1; i < n; ++i) {
        double x = ReadAsDouble(input, (o * n + i) * inner + j);
        double b = ReadAsDouble(input, (o * n + best) * inner + j);
        if (std::isnan(b)) break;
        if (std::isnan(x) || (is_max ? x > b : x < b)) best = i;
      }
      out.data<double>()[o * inner + j] = static_cast<double>(best);
    }
  return out.CastTo(output_type);
}

}  // namespace

TEST_CASE("ArgMax and ArgMin match naive loops", "[reduce]") {
  std::mt19937 rng(7);
  uint64_t seed = 500;
  for (int trial = 0; trial < 40; ++trial) {
    int rank = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) dims.push_back(1 + rng() % 6);
    int axis = static_cast<int>(rng() % rank);
    DType dtype = std::vector<DType>{DType::kFloat32, DType::kFloat64, DType::kInt32,
                                     DType::kInt64}[trial % 4];
    // Integers in a narrow range give many ties: the first index must win.
    Tensor x = RandomTensor(dtype, Shape(dims), seed++, -2, 2);
    DType out_type = trial % 3 == 0 ? DType::kInt32 : DType::kInt64;
    int64_t dimension = rng() % 2 ? axis : axis - rank;
    for (bool is_max : {true, false}) {
      INFO((is_max ? "ArgMax" : "ArgMin") << " of " << x.DebugString(40) << " dimension " << dimension);
      Tensor got = RunOp1({.op = is_max ? "ArgMax" : "ArgMin",
                           .inputs = {x, Tensor::Scalar<int64_t>(dimension)},
                           .attrs = {{"output_type", out_type}}, .const_inputs = {1}});
      ExpectEqual(got, ReferenceArg(x, axis, is_max, out_type));
    }
  }
  // Big inputs, split over threads along rows, columns and chunks of rows;
  // integers in a narrow range put ties across chunks (the first must win).
  for (Shape shape : {Shape{2000, 37}, Shape{3, 20011}, Shape{40, 50, 30}, Shape{5000, 4}})
    for (int axis = 0; axis < shape.rank(); ++axis)
      for (DType dtype : {DType::kFloat32, DType::kInt32}) {
        Tensor x = RandomTensor(dtype, shape, seed++, -2, 2);
        if (dtype == DType::kFloat32) x.data<float>()[x.NumElements() - 3] = NAN;
        for (bool is_max : {true, false}) {
          INFO((is_max ? "ArgMax" : "ArgMin") << " of " << x.SummaryString() << " axis " << axis);
          Tensor got = RunOp1({.op = is_max ? "ArgMax" : "ArgMin",
                               .inputs = {x, Tensor::Scalar<int32_t>(axis)}});
          ExpectEqual(got, ReferenceArg(x, axis, is_max, DType::kInt64));
        }
      }
}

TEST_CASE("ArgMax picks the first NaN; errors name the problem", "[reduce]") {
  Tensor x = Tensor::FromVector<float>({1, NAN, 7, NAN, 0, -1}, {3, 2});
  Tensor got = RunOp1({.op = "ArgMax", .inputs = {x, Tensor::Scalar<int32_t>(0)}});
  ExpectEqual(got, Tensor::FromVector<int64_t>({1, 0}));  // columns [1,7,0] and [NaN,NaN,-1]
  ExpectEqual(RunOp1({.op = "ArgMin", .inputs = {x, Tensor::Scalar<int32_t>(1)}}),
              Tensor::FromVector<int64_t>({1, 1, 1}));
  Scope s = Scope::NewRootScope();
  auto p = ops::Placeholder(s.WithOpName("p"), DType::kFloat32, {4, 0});
  ExpectError([&] { ops::ArgMax(s, p, 2); }, Code::kInvalidArgument, "axis 2 is out of range");
  ExpectError([&] { ops::ArgMax(s, p, {0, 1}); }, Code::kInvalidArgument, "dimension must be a scalar");
  auto scalar = ops::Placeholder(s.WithOpName("scalar"), DType::kFloat32, Shape{});
  ExpectError([&] { ops::ArgMin(s, scalar, 0); }, Code::kInvalidArgument, "rank >= 1");
  auto empty = ops::ArgMax(s.WithOpName("empty"), p, 1, {.output_type = DType::kInt32});
  CHECK(empty.shape() == Shape({4}));
  CHECK(empty.dtype() == DType::kInt32);
  auto fine = ops::ArgMax(s.WithOpName("fine"), p, 0);  // reduces 4 rows of an empty [4,0]: output []
  Session session(s);
  ExpectError([&] { session.Run({{p, Tensor::Zeros(DType::kFloat32, {4, 0})}}, {empty}); },
              Code::kInvalidArgument, "dimension 1 is empty in input shape [4,0]");
  CHECK(session.Run({{p, Tensor::Zeros(DType::kFloat32, {4, 0})}}, {fine})[0].shape() == Shape({0}));
}

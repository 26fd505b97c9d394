// Element-wise math ops against naive reference loops: unary functions,
// broadcasting binary ops, comparisons, logic, Select, Cast and AddN,
// including broadcasting corners, scalars, zero-size dims and bad input.
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "ops/math.h"
#include "ops/state.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {


// Numpy broadcasting done the slow, obvious way.
Shape RefBroadcastShape(const std::vector<Shape>& shapes) {
  int rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.rank());
  std::vector<int64_t> dims(rank, 1);
  for (const Shape& s : shapes)
    for (int i = 0; i < s.rank(); ++i) {
      int64_t& d = dims[rank - s.rank() + i];
      if (s.dim(i) != 1) d = s.dim(i);
    }
  return Shape(dims);
}

// The flat index into `in` of output element `flat` (dims of size 1 repeat).
int64_t RefIndex(const Shape& out, int64_t flat, const Shape& in) {
  int64_t index = 0, stride = 1;
  for (int d = out.rank() - 1; d >= 0; --d) {
    int64_t i = flat % out.dim(d);
    flat /= out.dim(d);
    int di = d - (out.rank() - in.rank());
    if (di < 0) continue;
    if (in.dim(di) != 1) index += i * stride;
    stride *= in.dim(di);
  }
  return index;
}

template <typename T, typename Out, typename F>
Tensor RefBinary(const Tensor& x, const Tensor& y, F f) {
  Shape shape = RefBroadcastShape({x.shape(), y.shape()});
  Tensor z(kDTypeOf<Out>, shape);
  for (int64_t i = 0; i < z.NumElements(); ++i)
    z.data<Out>()[i] = f(x.data<T>()[RefIndex(shape, i, x.shape())],
                         y.data<T>()[RefIndex(shape, i, y.shape())]);
  return z;
}

// Pairs that cover same shape, [3,1] vs [1,4], rank mismatch both ways,
// scalars, zero-size dims and sizes big enough to be split over threads.
const std::vector<std::pair<Shape, Shape>> kPairs = {
    {{3, 4}, {3, 4}},       {{3, 1}, {1, 4}},   {{2, 3, 4}, {4}},        {{4}, {2, 3, 4}},
    {{}, {2, 3}},           {{2, 3}, {}},       {{}, {}},                {{1}, {}},
    {{0, 3}, {3}},          {{0, 3}, {1, 3}},   {{2, 0}, {2, 1}},        {{2, 1, 3}, {1, 4, 1}},
    {{2, 3, 1, 5}, {3, 4, 1}}, {{5, 1}, {5, 6}}, {{1, 1}, {7}},          {{64, 1000}, {1000}},
    {{64, 1000}, {64, 1}},  {{40, 1000}, {40, 1000}}, {{}, {50, 1000}},
};

template <typename T>
Tensor Random(const Shape& shape, uint64_t seed, double lo, double hi, bool nonzero = false) {
  Tensor t = RandomTensor(kDTypeOf<T>, shape, seed, lo, hi);
  if (nonzero)
    for (T& v : t.flat<T>())
      if (v == T(0)) v = T(3);
  return t;
}

template <typename T>
double Rtol() { return std::is_same_v<T, float> ? 2e-6 : std::is_same_v<T, double> ? 1e-13 : 0; }

// Runs `op` on every pair of kPairs and compares with ref applied naively.
template <typename T, typename Out = T, typename F>
void CheckBinary(const std::string& op, F ref, double lo, double hi, bool nonzero_y = false,
                 double rtol = Rtol<T>()) {
  uint64_t seed = 1;
  for (const auto& [xs, ys] : kPairs) {
    Tensor x = Random<T>(xs, seed++, lo, hi), y = Random<T>(ys, seed++, lo, hi, nonzero_y);
    INFO(op << " " << DTypeName(kDTypeOf<T>) << " " << xs.ToString() << " vs " << ys.ToString());
    ExpectClose(Run(op, {x, y}), RefBinary<T, Out>(x, y, ref), rtol, 1e-12);
  }
}

struct UnaryCase {
  std::string op;
  double (*ref)(double);
  double lo, hi;
  bool ints;  // also registered for int32/int64
};

double Sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : x; }

const std::vector<UnaryCase> kUnaryCases = {
    {"Neg", [](double x) { return -x; }, -10, 10, true},
    {"Abs", [](double x) { return std::abs(x); }, -10, 10, true},
    {"Sign", Sign, -3, 3, true},
    {"Square", [](double x) { return x * x; }, -10, 10, true},
    {"Exp", [](double x) { return std::exp(x); }, -10, 10, false},
    {"Log", [](double x) { return std::log(x); }, 1e-3, 100, false},
    {"Log1p", [](double x) { return std::log1p(x); }, -0.99, 10, false},
    {"Sqrt", [](double x) { return std::sqrt(x); }, 0, 100, false},
    {"Rsqrt", [](double x) { return 1 / std::sqrt(x); }, 1e-3, 100, false},
    {"Reciprocal", [](double x) { return 1 / x; }, -10, 10, false},
    {"Sin", [](double x) { return std::sin(x); }, -10, 10, false},
    {"Cos", [](double x) { return std::cos(x); }, -10, 10, false},
    {"Tanh", [](double x) { return std::tanh(x); }, -12, 12, false},
    {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, -30, 30, false},
    {"Floor", [](double x) { return std::floor(x); }, -10, 10, false},
    {"Ceil", [](double x) { return std::ceil(x); }, -10, 10, false},
    {"Round", [](double x) { return std::nearbyint(x); }, -10, 10, false},
};

Tensor RefUnary(const Tensor& x, double (*f)(double)) {
  Tensor y(DType::kFloat64, x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) y.data<double>()[i] = f(ReadAsDouble(x, i));
  return y.CastTo(x.dtype());
}

}  // namespace

TEST_CASE("unary math ops match std:: references", "[math]") {
  const std::vector<Shape> shapes = {{}, {7}, {3, 5}, {0, 3}, {50, 1001}};
  for (const UnaryCase& c : kUnaryCases) {
    std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat64};
    if (c.ints) dtypes.insert(dtypes.end(), {DType::kInt32, DType::kInt64});
    uint64_t seed = 100;
    for (DType dtype : dtypes)
      for (const Shape& shape : shapes) {
        INFO(c.op << " " << DTypeName(dtype) << shape.ToString());
        Tensor x = RandomTensor(dtype, shape, seed++, c.lo, c.hi);
        double rtol = dtype == DType::kFloat32 ? 2e-6 : dtype == DType::kFloat64 ? 1e-13 : 0;
        ExpectClose(Run(c.op, {x}), RefUnary(x, c.ref), rtol, rtol);
      }
  }
}

TEST_CASE("Round rounds halves to even; edge values of unary ops", "[math]") {
  auto halves = Tensor::FromVector<float>({-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f, 2.4f});
  ExpectEqual(Run("Round", {halves}), Tensor::FromVector<float>({-2, -2, -0.f, 0, 2, 2, 4, 2}));
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  auto edges = Tensor::FromVector<double>({0.0, -1.0, inf});
  ExpectEqual(Run("Log", {edges}), Tensor::FromVector<double>({-inf, nan, inf}));
  ExpectEqual(Run("Rsqrt", {edges}), Tensor::FromVector<double>({inf, nan, 0}));
  ExpectEqual(Run("Sign", {Tensor::FromVector<double>({nan, -0.0, 5})}),
              Tensor::FromVector<double>({nan, 0, 1}));
  auto big = Tensor::FromVector<float>({-100, 100, -1e-3f});
  ExpectClose(Run("Sigmoid", {big}), Tensor::FromVector<float>({0, 1, 0.49975f}), 1e-5, 1e-30);
  ExpectClose(Run("Tanh", {big}), Tensor::FromVector<float>({-1, 1, -1e-3f}), 1e-6, 0);
  // Integer negation wraps instead of overflowing.
  int32_t min32 = std::numeric_limits<int32_t>::min();
  ExpectEqual(Run("Neg", {Tensor::FromVector<int32_t>({min32, 5})}),
              Tensor::FromVector<int32_t>({min32, -5}));
}

TEMPLATE_TEST_CASE("arithmetic ops broadcast like numpy", "[math]", float, double, int32_t,
                   int64_t) {
  using T = TestType;
  CheckBinary<T>("Add", [](T x, T y) { return T(x + y); }, -100, 100);
  CheckBinary<T>("Sub", [](T x, T y) { return T(x - y); }, -100, 100);
  CheckBinary<T>("Mul", [](T x, T y) { return T(x * y); }, -100, 100);
  CheckBinary<T>("Div", [](T x, T y) { return T(x / y); }, -100, 100, true);
  CheckBinary<T>("Maximum", [](T x, T y) { return x > y ? x : y; }, -100, 100);
  CheckBinary<T>("Minimum", [](T x, T y) { return x < y ? x : y; }, -100, 100);
  CheckBinary<T>("SquaredDifference", [](T x, T y) { return T((x - y) * (x - y)); }, -100, 100);
  // floor(x / y) in exact (double) arithmetic; FloorMod is then x - y * floor(x / y).
  auto floor_div = [](T x, T y) {
    if constexpr (std::is_integral_v<T>) return T(std::floor(double(x) / double(y)));
    else return T(std::floor(x / y));
  };
  CheckBinary<T>("FloorDiv", floor_div, -100, 100, true);
  if constexpr (std::is_integral_v<T>) {
    auto floor_mod = [&](T x, T y) { return T(x - y * floor_div(x, y)); };
    CheckBinary<T>("FloorMod", floor_mod, -100, 100, true);
  } else {
    // Python's float %: fmod, moved to the divisor's sign.
    auto py_mod = [](T x, T y) {
      T r = std::fmod(x, y);
      return r != 0 && ((r < 0) != (y < 0)) ? T(r + y) : r;
    };
    CheckBinary<T>("FloorMod", py_mod, -100, 100, true);
    CheckBinary<T>("Pow", [](T x, T y) { return T(std::pow(x, y)); }, 0.1, 3, false,
                   std::is_same_v<T, float> ? 1e-5 : 1e-13);
  }
}

TEST_CASE("FloorDiv and FloorMod follow Python's signs; Div truncates integers", "[math]") {
  auto x = Tensor::FromVector<int32_t>({7, -7, 7, -7, 6, -6});
  auto y = Tensor::FromVector<int32_t>({2, 2, -2, -2, -3, 3});
  ExpectEqual(Run("FloorDiv", {x, y}), Tensor::FromVector<int32_t>({3, -4, -4, 3, -2, -2}));
  ExpectEqual(Run("FloorMod", {x, y}), Tensor::FromVector<int32_t>({1, 1, -1, -1, 0, 0}));
  ExpectEqual(Run("Div", {x, y}), Tensor::FromVector<int32_t>({3, -3, -3, 3, -2, -2}));
  auto fx = Tensor::FromVector<double>({7.5, -7.5, 7.5, -7.5});
  auto fy = Tensor::FromVector<double>({2, 2, -2, -2});
  ExpectEqual(Run("FloorMod", {fx, fy}), Tensor::FromVector<double>({1.5, 0.5, -0.5, -1.5}));
  ExpectEqual(Run("FloorDiv", {fx, fy}), Tensor::FromVector<double>({3, -4, -4, 3}));
  // INT64_MIN / -1 overflows (a SIGFPE in C); here it wraps, and the remainder is 0.
  int64_t min64 = std::numeric_limits<int64_t>::min();
  auto big = Tensor::FromVector<int64_t>({min64, 9});
  auto minus_one = Tensor::Scalar<int64_t>(-1);
  ExpectEqual(Run("Div", {big, minus_one}), Tensor::FromVector<int64_t>({min64, -9}));
  ExpectEqual(Run("FloorDiv", {big, minus_one}), Tensor::FromVector<int64_t>({min64, -9}));
  ExpectEqual(Run("FloorMod", {big, minus_one}), Tensor::FromVector<int64_t>({0, 0}));
  // Float division by zero is IEEE: inf, not an error.
  ExpectEqual(Run("Div", {Tensor::Scalar(1.0f), Tensor::Scalar(0.0f)}),
              Tensor::Scalar(std::numeric_limits<float>::infinity()));
}

TEST_CASE("integer division by zero is a clear error", "[math]") {
  for (std::string op : {"Div", "FloorDiv", "FloorMod"}) {
    INFO(op);
    auto x = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
    ExpectError([&] { Run(op, {x, Tensor::FromVector<int32_t>({1, 0, 2})}); },
                Code::kInvalidArgument, "integer division by zero");
    ExpectError([&] { Run(op, {x, Tensor::Scalar<int32_t>(0)}); },
                Code::kInvalidArgument, "integer division by zero");
    ExpectError([&] { Run(op, {x.CastTo(DType::kInt64), Tensor::Zeros(DType::kInt64, {2, 3})}); },
                Code::kInvalidArgument, "integer division by zero");
    // No division happens when the output is empty.
    auto empty = Run(op, {Tensor::Zeros(DType::kInt32, {0, 3}), Tensor::Zeros(DType::kInt32, {3})});
    CHECK(empty.shape() == Shape({0, 3}));
  }
}

TEMPLATE_TEST_CASE("comparisons broadcast and give bool", "[math]", float, double, int32_t,
                   int64_t) {
  using T = TestType;
  // Small integers, so that equal pairs are common.
  auto check = [](const std::string& op, auto ref) {
    uint64_t seed = 7;
    for (const auto& [xs, ys] : kPairs) {
      Tensor x = RandomTensor(DType::kInt32, xs, seed++, -3, 3).CastTo(kDTypeOf<T>);
      Tensor y = RandomTensor(DType::kInt32, ys, seed++, -3, 3).CastTo(kDTypeOf<T>);
      INFO(op << " " << xs.ToString() << " vs " << ys.ToString());
      ExpectEqual(Run(op, {x, y}), RefBinary<T, bool>(x, y, ref));
    }
  };
  check("Less", [](T x, T y) { return x < y; });
  check("LessEqual", [](T x, T y) { return x <= y; });
  check("Greater", [](T x, T y) { return x > y; });
  check("GreaterEqual", [](T x, T y) { return x >= y; });
  check("Equal", [](T x, T y) { return x == y; });
  check("NotEqual", [](T x, T y) { return x != y; });
}

TEST_CASE("logical ops and bool equality", "[math]") {
  uint64_t seed = 11;
  for (const auto& [xs, ys] : kPairs) {
    Tensor x = RandomTensor(DType::kBool, xs, seed++), y = RandomTensor(DType::kBool, ys, seed++);
    INFO(xs.ToString() << " vs " << ys.ToString());
    ExpectEqual(Run("LogicalAnd", {x, y}),
                RefBinary<bool, bool>(x, y, [](bool a, bool b) { return a && b; }));
    ExpectEqual(Run("LogicalOr", {x, y}),
                RefBinary<bool, bool>(x, y, [](bool a, bool b) { return a || b; }));
    ExpectEqual(Run("Equal", {x, y}),
                RefBinary<bool, bool>(x, y, [](bool a, bool b) { return a == b; }));
    Tensor not_x(DType::kBool, x.shape());
    for (int64_t i = 0; i < x.NumElements(); ++i) not_x.data<bool>()[i] = !x.data<bool>()[i];
    ExpectEqual(Run("LogicalNot", {x}), not_x);
  }
}

TEST_CASE("Select broadcasts condition, t and e together (SelectV2)", "[math]") {
  const std::vector<std::array<Shape, 3>> triples = {
      {Shape{3, 4}, Shape{3, 4}, Shape{3, 4}}, {Shape{3, 1}, Shape{1, 4}, Shape{}},
      {Shape{4}, Shape{2, 3, 4}, Shape{3, 1}}, {Shape{}, Shape{2, 3}, Shape{2, 3}},
      {Shape{2, 1}, Shape{}, Shape{}},         {Shape{0, 3}, Shape{3}, Shape{1, 3}},
      {Shape{64, 1000}, Shape{64, 1000}, Shape{1000}}, {Shape{64, 1}, Shape{1000}, Shape{64, 1000}},
  };
  uint64_t seed = 21;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                      DType::kFloat16, DType::kInt8, DType::kBool}) {
    for (const auto& [cs, ts, es] : triples) {
      INFO(DTypeName(dtype) << " " << cs.ToString() << " " << ts.ToString() << " "
                            << es.ToString());
      Tensor c = RandomTensor(DType::kBool, cs, seed++);
      Tensor t = RandomTensor(dtype, ts, seed++, -50, 50);
      Tensor e = RandomTensor(dtype, es, seed++, -50, 50);
      Shape shape = RefBroadcastShape({cs, ts, es});
      Tensor expected(DType::kFloat64, shape);
      for (int64_t i = 0; i < expected.NumElements(); ++i)
        expected.data<double>()[i] = c.data<bool>()[RefIndex(shape, i, cs)]
                                         ? ReadAsDouble(t, RefIndex(shape, i, ts))
                                         : ReadAsDouble(e, RefIndex(shape, i, es));
      ExpectEqual(Run("Select", {c, t, e}), expected.CastTo(dtype));
    }
  }
}

TEST_CASE("chained element-wise ops compute right when they reuse buffers", "[math]") {
  // Intermediate results have one consumer, so kernels write into their inputs.
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {40, 1000});
  auto y = ops::Placeholder(s.WithOpName("y"), DType::kFloat32, {1000});
  auto a = ops::Exp(s, ops::Neg(s, ops::Mul(s, x, 0.5f)));       // e^(-x/2)
  auto b = ops::Sub(s, ops::Add(s, x, y), ops::Square(s, y));   // x + y - y^2
  auto z = ops::Select(s, ops::Greater(s, a, 1.0f), ops::Mul(s, a, b), ops::Add(s, b, a));
  Tensor xv = RandomTensor(DType::kFloat32, {40, 1000}, 1, -2, 2);
  Tensor yv = RandomTensor(DType::kFloat32, {1000}, 2, -2, 2);
  Tensor got = Session(s).Run({{x, xv}, {y, yv}}, {z})[0];
  Tensor expected(DType::kFloat32, {40, 1000});
  for (int64_t i = 0; i < expected.NumElements(); ++i) {
    float xi = xv.data<float>()[i], yi = yv.data<float>()[i % 1000];
    float av = std::exp(-(xi * 0.5f)), bv = xi + yi - yi * yi;
    expected.data<float>()[i] = av > 1 ? av * bv : bv + av;
  }
  ExpectClose(got, expected, 1e-5, 1e-6);
}

TEST_CASE("incompatible shapes and dtypes fail when the graph is built", "[math]") {
  Scope s = Scope::NewRootScope();
  auto a = ops::Placeholder(s.WithOpName("a"), DType::kFloat32, {3, 2});
  auto b = ops::Placeholder(s.WithOpName("b"), DType::kFloat32, {4});
  auto d = ops::Placeholder(s.WithOpName("d"), DType::kFloat64, {3, 2});
  auto i = ops::Placeholder(s.WithOpName("i"), DType::kInt32, {3, 2});
  ExpectError([&] { ops::Add(s.WithOpName("sum"), a, b); }, Code::kInvalidArgument,
              "Add 'sum': shapes [3,2] and [4] cannot be broadcast");
  ExpectError([&] { ops::Less(s, b, a); }, Code::kInvalidArgument, "shapes [4] and [3,2]");
  ExpectError([&] { ops::Select(s, ops::Less(s, a, a), a, b); }, Code::kInvalidArgument,
              "shapes [3,2] and [4] cannot be broadcast");
  ExpectError([&] { ops::Mul(s, a, d); }, Code::kInvalidArgument,
              "input 'y' (d) is float64 but T is float32 (from input 'x' (a))");
  ExpectError([&] { ops::Select(s, a, a, a); }, Code::kInvalidArgument,
              "input 'condition' (a) must be bool");
  ExpectError([&] { ops::Exp(s, i); }, Code::kInvalidArgument, "T=int32 is not allowed");
  ExpectError([&] { ops::LogicalAnd(s, a, a); }, Code::kInvalidArgument, "must be bool");
  ExpectError([&] { ops::AddN(s, {a, a, b}); }, Code::kInvalidArgument,
              "inputs[0] is [3,2], inputs[2] is [4]");
  ExpectError([&] { ops::AddN(s, {a, d}); }, Code::kInvalidArgument, "input 'inputs'[1] (d)");
}

TEST_CASE("shapes known only at run time are checked by the kernels", "[math]") {
  Scope s = Scope::NewRootScope();
  auto a = ops::Placeholder(s.WithOpName("a"), DType::kFloat32);
  auto b = ops::Placeholder(s.WithOpName("b"), DType::kFloat32);
  auto sum = ops::Add(s.WithOpName("sum"), a, b);
  auto pick = ops::Select(s.WithOpName("pick"), ops::Less(s, a, 0.0f), a, b);
  auto total = ops::AddN(s.WithOpName("total"), {a, b});
  Session session(s);
  FeedList feeds = {{a, Tensor::Zeros(DType::kFloat32, {3, 2})},
                    {b, Tensor::Zeros(DType::kFloat32, {4})}};
  ExpectError([&] { session.Run(feeds, {sum}); }, Code::kInvalidArgument,
              "shapes [3,2] and [4] cannot be broadcast");
  ExpectError([&] { session.Run(feeds, {pick}); }, Code::kInvalidArgument, "shapes [3,2] and [4]");
  ExpectError([&] { session.Run(feeds, {total}); }, Code::kInvalidArgument,
              "inputs[1] has shape [4] but inputs[0] has shape [3,2]");
  feeds[1].second = Tensor::Zeros(DType::kFloat32, {1, 2});
  CHECK(session.Run(feeds, {sum})[0].shape() == Shape({3, 2}));
}

TEST_CASE("builders accept literals of the other operand's dtype", "[math]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64, {3});
  auto y = ops::Mul(s, 2.0f, x);                                    // the literal becomes float64
  auto z = ops::Select(s, ops::Greater(s, x, 0.0), x, 0.0f);        // e follows t's dtype
  auto cast = ops::Cast(s, z, DType::kInt32);
  auto out = Session(s).Run({{x, Tensor::FromVector<double>({-1.5, 2.5, 3})}}, {y, z, cast});
  ExpectEqual(out[0], Tensor::FromVector<double>({-3, 5, 6}));
  ExpectEqual(out[1], Tensor::FromVector<double>({0, 2.5, 3}));
  ExpectEqual(out[2], Tensor::FromVector<int32_t>({0, 2, 3}));
}

TEST_CASE("Cast converts between every pair of dtypes", "[math]") {
  // Small non-negative integers are exact in every dtype, so the core's
  // Tensor::CastTo is a safe reference here; the edges are tested below.
  uint64_t seed = 31;
  for (DType src : AllDTypes())
    for (DType dst : AllDTypes())
      for (const Shape& shape : {Shape{}, Shape{0, 2}, Shape{3, 5}, Shape{60, 1000}}) {
        INFO(DTypeName(src) << " -> " << DTypeName(dst) << shape.ToString());
        Tensor x = RandomTensor(src, shape, seed++, 0, 5);
        ExpectEqual(Run("Cast", {x}, {{"DstT", dst}}), x.CastTo(dst));
      }
}

TEST_CASE("Cast round trips, float16, truncation and saturation", "[math]") {
  auto cast = [](const Tensor& x, DType dst, bool truncate = false) {
    return Run("Cast", {x}, {{"DstT", dst}, {"Truncate", truncate}});
  };
  Tensor f = RandomTensor(DType::kFloat32, {200}, 5, -1000, 1000);
  ExpectEqual(cast(cast(f, DType::kFloat64), DType::kFloat32), f);
  // float16 holds every multiple of 1/64 below 16 exactly.
  Tensor exact(DType::kFloat32, {256});
  for (int i = 0; i < 256; ++i) exact.data<float>()[i] = (i - 128) / 64.0f;
  ExpectEqual(cast(cast(exact, DType::kFloat16), DType::kFloat32), exact);
  ExpectEqual(cast(cast(exact, DType::kFloat16), DType::kFloat64), exact.CastTo(DType::kFloat64));
  // Other values round to the nearest float16 (within half a unit: 2^-11 relative).
  ExpectClose(cast(cast(f, DType::kFloat16), DType::kFloat32), f, 1.0 / 2048, 0);
  Tensor i = RandomTensor(DType::kInt64, {100}, 6, -1e6, 1e6);
  ExpectEqual(cast(cast(i, DType::kFloat64), DType::kInt64), i);

  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  auto edges = Tensor::FromVector<float>({-2.7f, -0.5f, 0.5f, 2.7f, 1e10f, -1e10f, nan, inf});
  int32_t max32 = std::numeric_limits<int32_t>::max(), min32 = std::numeric_limits<int32_t>::min();
  ExpectEqual(cast(edges, DType::kInt32),
              Tensor::FromVector<int32_t>({-2, 0, 0, 2, max32, min32, 0, max32}));
  ExpectEqual(cast(edges, DType::kUInt8),
              Tensor::FromVector<uint8_t>({0, 0, 0, 2, 255, 0, 0, 255}));
  ExpectEqual(cast(edges, DType::kBool), Tensor::FromVector<bool>({1, 1, 1, 1, 1, 1, 1, 1}));
  ExpectEqual(cast(Tensor::FromVector<double>({0.0, -0.0, 3}), DType::kBool),
              Tensor::FromVector<bool>({0, 0, 1}));

  // Truncate rounds toward zero where the default rounds to nearest.
  double d = 1.0 + std::ldexp(1.0, -24) + std::ldexp(1.0, -30);  // just above a float tie
  auto narrow = Tensor::FromVector<double>({d, -d});
  ExpectEqual(cast(narrow, DType::kFloat32),
              Tensor::FromVector<float>({1 + std::ldexp(1.0f, -23), -1 - std::ldexp(1.0f, -23)}));
  ExpectEqual(cast(narrow, DType::kFloat32, true), Tensor::FromVector<float>({1, -1}));
  auto halfish =
      Tensor::FromVector<float>({1 + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -13), 65520, -1e6f});
  ExpectEqual(cast(cast(halfish, DType::kFloat16), DType::kFloat32),
              Tensor::FromVector<float>({1 + std::ldexp(1.0f, -10), inf, -inf}));
  ExpectEqual(cast(cast(halfish, DType::kFloat16, true), DType::kFloat32),
              Tensor::FromVector<float>({1, 65504, -65504}));
}

TEST_CASE("Cast to and from float16 rounds like Half on every kind of value", "[math]") {
  // Normals, subnormals, overflow, ties, zeros, infinities and NaN, in a long
  // vector so that vectorised conversion paths are covered too.
  std::vector<float> values = {0.0f, -0.0f, 65504, 65519, 65520, -1e9f,
                               std::ldexp(1.0f, -24), std::ldexp(1.0f, -25), std::ldexp(3.0f, -26),
                               1 + std::ldexp(1.0f, -11), std::numeric_limits<float>::infinity(),
                               std::nanf("")};
  Tensor random = RandomTensor(DType::kFloat32, {500}, 9, -1, 1);
  for (int i = 0; i < 500; ++i)
    values.push_back(std::ldexp(random.data<float>()[i], i % 48 - 30));
  Tensor x = Tensor::FromVector(values);
  Tensor expected(DType::kFloat16, x.shape());
  for (size_t i = 0; i < values.size(); ++i) expected.data<Half>()[i] = Half(values[i]);
  Tensor halves = Run("Cast", {x}, {{"DstT", DType::kFloat16}});
  ExpectEqual(halves, expected);
  Tensor back(DType::kFloat32, x.shape());
  for (size_t i = 0; i < values.size(); ++i)
    back.data<float>()[i] = static_cast<float>(expected.data<Half>()[i]);
  ExpectEqual(Run("Cast", {halves}, {{"DstT", DType::kFloat32}}), back);
}

TEMPLATE_TEST_CASE("AddN sums 1 to 5 same-shaped tensors", "[math]", float, double, int32_t,
                   int64_t) {
  using T = TestType;
  uint64_t seed = 41;
  for (int n : {1, 2, 3, 5})
    for (const Shape& shape : {Shape{}, Shape{0, 3}, Shape{4, 3}, Shape{50, 1001}}) {
      INFO(n << " inputs of " << shape.ToString());
      std::vector<Tensor> inputs;
      Tensor expected = Tensor::Zeros(kDTypeOf<T>, shape);
      for (int k = 0; k < n; ++k) {
        inputs.push_back(RandomTensor(kDTypeOf<T>, shape, seed++, -100, 100));
        for (int64_t i = 0; i < expected.NumElements(); ++i)
          expected.data<T>()[i] += inputs.back().data<T>()[i];
      }
      ExpectClose(Run("AddN", inputs), expected, Rtol<T>() * 10, Rtol<T>() * 100);
    }
}

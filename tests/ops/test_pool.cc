// MaxPool, AvgPool and their gradient ops against naive double-precision
// references over random NHWC shapes (odd sizes, kernels 1-3, strides 1-3,
// SAME and VALID, batch 1 and 3, channels 1 and 5); global average pooling;
// attr and shape errors naming the node.
#include <algorithm>
#include <cmath>

#include <catch2/catch.hpp>

#include "ops/pool.h"
#include "ops/state.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

struct PoolCase {
  Shape shape;  // NHWC input
  int64_t kh, kw, sh, sw;
  bool same;

  AttrMap Attrs() const {
    return {{"ksize", std::vector<int64_t>{1, kh, kw, 1}},
            {"strides", std::vector<int64_t>{1, sh, sw, 1}},
            {"padding", std::string(same ? "SAME" : "VALID")}};
  }
  std::string ToString() const {
    return StrCat(shape.ToString(), " k ", kh, "x", kw, " s ", sh, "x", sw, same ? " SAME" : " VALID");
  }
};

// TensorFlow's output size and leading padding of one dim.
std::pair<int64_t, int64_t> OutAndPad(int64_t in, int64_t k, int64_t s, bool same) {
  if (!same) return {(in - k) / s + 1, 0};
  int64_t out = (in + s - 1) / s;
  return {out, std::max<int64_t>((out - 1) * s + k - in, 0) / 2};
}

Shape OutputShape(const PoolCase& p) {
  return {p.shape.dim(0), OutAndPad(p.shape.dim(1), p.kh, p.sh, p.same).first,
          OutAndPad(p.shape.dim(2), p.kw, p.sw, p.same).first, p.shape.dim(3)};
}

// Calls visit(o, taps) for each output element o (flat index) with the flat
// input indices of its window inside the image, row-major.
template <typename F>
void ForEachWindow(const PoolCase& p, F visit) {
  int64_t N = p.shape.dim(0), H = p.shape.dim(1), W = p.shape.dim(2), C = p.shape.dim(3);
  auto [oh, ph] = OutAndPad(H, p.kh, p.sh, p.same);
  auto [ow, pw] = OutAndPad(W, p.kw, p.sw, p.same);
  int64_t o = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t c = 0; c < C; ++c, ++o) {
          std::vector<int64_t> taps;
          for (int64_t h = i * p.sh - ph; h < i * p.sh - ph + p.kh; ++h)
            for (int64_t w = j * p.sw - pw; w < j * p.sw - pw + p.kw; ++w)
              if (h >= 0 && h < H && w >= 0 && w < W) taps.push_back(((n * H + h) * W + w) * C + c);
          visit(o, taps);
        }
}

// The first tap holding the window's maximum.
int64_t Argmax(const Tensor& x, const std::vector<int64_t>& taps) {
  int64_t best = taps.at(0);
  for (int64_t t : taps)
    if (ReadAsDouble(x, t) > ReadAsDouble(x, best)) best = t;
  return best;
}

Tensor MaxPoolRef(const PoolCase& p, const Tensor& x) {
  Tensor y(DType::kFloat64, OutputShape(p));
  ForEachWindow(p, [&](int64_t o, const auto& taps) { y.data<double>()[o] = ReadAsDouble(x, Argmax(x, taps)); });
  return y.CastTo(x.dtype());
}

Tensor AvgPoolRef(const PoolCase& p, const Tensor& x) {
  Tensor y(DType::kFloat64, OutputShape(p));
  ForEachWindow(p, [&](int64_t o, const auto& taps) {
    double sum = 0;
    for (int64_t t : taps) sum += ReadAsDouble(x, t);
    y.data<double>()[o] = sum / static_cast<double>(taps.size());
  });
  return y.CastTo(x.dtype());
}

Tensor MaxPoolGradRef(const PoolCase& p, const Tensor& x, const Tensor& g) {
  Tensor dx = Tensor::Zeros(DType::kFloat64, p.shape);
  ForEachWindow(p, [&](int64_t o, const auto& taps) { dx.data<double>()[Argmax(x, taps)] += ReadAsDouble(g, o); });
  return dx.CastTo(x.dtype());
}

Tensor MaxPoolGradGradRef(const PoolCase& p, const Tensor& x, const Tensor& gg) {
  Tensor y(DType::kFloat64, OutputShape(p));
  ForEachWindow(p, [&](int64_t o, const auto& taps) { y.data<double>()[o] = ReadAsDouble(gg, Argmax(x, taps)); });
  return y.CastTo(x.dtype());
}

Tensor AvgPoolGradRef(const PoolCase& p, const Tensor& g) {
  Tensor dx = Tensor::Zeros(DType::kFloat64, p.shape);
  ForEachWindow(p, [&](int64_t o, const auto& taps) {
    for (int64_t t : taps) dx.data<double>()[t] += ReadAsDouble(g, o) / static_cast<double>(taps.size());
  });
  return dx.CastTo(g.dtype());
}

// Every combination the task asks for, on odd and even spatial sizes.
std::vector<PoolCase> Cases() {
  std::vector<PoolCase> cases;
  const std::vector<std::pair<int64_t, int64_t>> windows = {{1, 1}, {2, 3}, {3, 2}, {3, 3}};
  const std::vector<std::pair<int64_t, int64_t>> strides = {{1, 1}, {2, 1}, {1, 3}, {2, 2}, {3, 3}};
  int variant = 0;
  for (int64_t batch : {1, 3})
    for (int64_t channels : {1, 5})
      for (auto [kh, kw] : windows)
        for (auto [sh, sw] : strides)
          for (bool same : {false, true}) {
            Shape shape = ++variant % 2 ? Shape{batch, 7, 5, channels} : Shape{batch, 4, 6, channels};
            cases.push_back({shape, kh, kw, sh, sw, same});
          }
  return cases;
}

const std::vector<DType> kFloats = {DType::kFloat32, DType::kFloat64};

double Tolerance(DType dtype) { return dtype == DType::kFloat32 ? 1e-5 : 1e-12; }

}  // namespace

TEST_CASE("MaxPool and AvgPool match references", "[pool]") {
  uint64_t seed = 1;
  for (DType dtype : kFloats)
    for (const PoolCase& p : Cases()) {
      INFO(DTypeName(dtype) << p.ToString());
      Tensor x = RandomTensor(dtype, p.shape, seed++);
      ExpectEqual(Run("MaxPool", {x}, p.Attrs()), MaxPoolRef(p, x));
      ExpectClose(Run("AvgPool", {x}, p.Attrs()), AvgPoolRef(p, x), Tolerance(dtype), Tolerance(dtype));
    }
}

TEST_CASE("pooling gradient ops match references", "[pool]") {
  uint64_t seed = 1000;
  for (DType dtype : kFloats)
    for (const PoolCase& p : Cases()) {
      INFO(DTypeName(dtype) << p.ToString());
      double tol = Tolerance(dtype);
      Tensor x = RandomTensor(dtype, p.shape, seed++);
      Tensor y = MaxPoolRef(p, x);
      Tensor g = RandomTensor(dtype, y.shape(), seed++);
      Tensor gg = RandomTensor(dtype, p.shape, seed++);
      ExpectClose(Run("MaxPoolGrad", {x, y, g}, p.Attrs()), MaxPoolGradRef(p, x, g), tol, tol);
      ExpectEqual(Run("MaxPoolGradGrad", {x, y, gg}, p.Attrs()), MaxPoolGradGradRef(p, x, gg));
      Tensor shape = Tensor::FromVector<int32_t>({static_cast<int32_t>(p.shape.dim(0)),
                                                  static_cast<int32_t>(p.shape.dim(1)),
                                                  static_cast<int32_t>(p.shape.dim(2)),
                                                  static_cast<int32_t>(p.shape.dim(3))});
      Tensor dx = RunOp1({.op = "AvgPoolGrad", .inputs = {shape, g}, .attrs = p.Attrs(),
                          .const_inputs = {0}});
      ExpectClose(dx, AvgPoolGradRef(p, g), tol, tol);
    }
}

TEST_CASE("MaxPoolGrad routes ties to the first maximum", "[pool]") {
  PoolCase p{{1, 2, 2, 1}, 2, 2, 1, 1, false};
  Tensor x = Tensor::FromVector<double>({1, 3, 3, 2}, {1, 2, 2, 1});
  Tensor y = Tensor::FromVector<double>({3}, {1, 1, 1, 1});
  Tensor g = Tensor::FromVector<double>({5}, {1, 1, 1, 1});
  ExpectEqual(Run("MaxPoolGrad", {x, y, g}, p.Attrs()),
              Tensor::FromVector<double>({0, 5, 0, 0}, {1, 2, 2, 1}));
}

TEST_CASE("AvgPool with SAME padding does not count the padding", "[pool]") {
  // 3x3 input, 2x2 window, stride 2, SAME: out 2x2, pad_total 1, pad_before 0.
  PoolCase p{{1, 3, 3, 1}, 2, 2, 2, 2, true};
  Tensor x = Tensor::FromVector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  ExpectEqual(Run("AvgPool", {x}, p.Attrs()),
              Tensor::FromVector<double>({3, 4.5, 7.5, 9}, {1, 2, 2, 1}));
}

TEST_CASE("GlobalAvgPool is the spatial mean", "[pool]") {
  Scope s = Scope::NewRootScope();
  Tensor xv = RandomTensor(DType::kFloat64, {2, 3, 4, 5}, 9);
  auto x = ops::Const(s, xv);
  auto flat = ops::GlobalAvgPool(s, x);
  auto kept = ops::GlobalAvgPool(s, x, {.keep_dims = true});
  auto out = Session(s).Run({flat, kept});
  PoolCase whole{{2, 3, 4, 5}, 3, 4, 1, 1, false};
  Tensor expected = AvgPoolRef(whole, xv);
  ExpectClose(out[1], expected, 1e-12, 1e-12);
  ExpectClose(out[0], expected.Reshaped({2, 5}), 1e-12, 1e-12);
}

TEST_CASE("pooling rejects bad attrs and shapes, naming the node", "[pool]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {1, 4, 4, 2});
  auto x3 = ops::Placeholder(s.WithOpName("x3"), DType::kFloat32, {4, 4, 2});
  ops::PoolWindow ok{{1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"};
  ExpectError([&] { ops::MaxPool(s.WithOpName("p1"), x3, ok); }, Code::kInvalidArgument,
              "MaxPool 'p1': input must be NHWC (rank 4), got [4,4,2]");
  ExpectError([&] { ops::AvgPool(s.WithOpName("p2"), x, {{1, 2, 2}, {1, 1, 1, 1}, "VALID"}); },
              Code::kInvalidArgument, "AvgPool 'p2': ksize must have 4 entries");
  ExpectError([&] { ops::MaxPool(s.WithOpName("p3"), x, {{2, 2, 2, 1}, {1, 1, 1, 1}, "VALID"}); },
              Code::kInvalidArgument, "MaxPool 'p3': ksize must be 1 on the batch and channel dims");
  ExpectError([&] { ops::MaxPool(s.WithOpName("p4"), x, {{1, 2, 2, 1}, {1, 0, 1, 1}, "SAME"}); },
              Code::kInvalidArgument, "MaxPool 'p4': strides entries must be >= 1, got 0");
  ExpectError([&] { ops::MaxPool(s.WithOpName("p5"), x, {{1, 2, 2, 1}, {1, 1, 1, 1}, "FULL"}); },
              Code::kInvalidArgument, "MaxPool 'p5': padding must be SAME or VALID, got 'FULL'");
  ExpectError([&] { ops::MaxPool(s.WithOpName("p6"), x, {{1, 5, 2, 1}, {1, 1, 1, 1}, "VALID"}); },
              Code::kInvalidArgument, "MaxPool 'p6': VALID padding needs the window (5)");
  auto g = ops::Placeholder(s.WithOpName("g"), DType::kFloat32, {1, 3, 3, 2});
  ExpectError([&] { ops::MaxPoolGrad(s.WithOpName("p7"), x, g, g, ok); }, Code::kInvalidArgument,
              "MaxPoolGrad 'p7': grad [1,3,3,2] does not match the pooled shape [1,2,2,2]");
}

TEST_CASE("pooling kernels check shapes known only at run time", "[pool]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64);
  auto y = ops::MaxPool(s.WithOpName("pool"), x, {{1, 2, 2, 1}, {1, 1, 1, 1}, "VALID"});
  Session session(s);
  ExpectError([&] { session.Run({{x, Tensor::Zeros(DType::kFloat64, {2, 3})}}, {y}); },
              Code::kInvalidArgument, "MaxPool 'pool': input must be NHWC (rank 4), got [2,3]");
}

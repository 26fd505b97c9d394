// MaxPool, AvgPool and their gradient ops against naive double-precision
// references over random NHWC shapes (odd sizes, kernels 1-3, strides 1-3,
// SAME and VALID, batch 1 and 3, channels 1 and 5); EXPLICIT pads, equal to
// SAME where they are SAME's and against the references where asymmetric;
// global average pooling; attr and shape errors naming the node.
#include <algorithm>
#include <cmath>
#include <limits>

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
  // (top, bottom, left, right): padding EXPLICIT with these pads (`same` unused).
  std::vector<int64_t> pads = {};

  AttrMap Attrs() const {
    std::vector<int64_t> explicit_paddings;
    if (!pads.empty()) explicit_paddings = {0, 0, pads[0], pads[1], pads[2], pads[3], 0, 0};
    return {{"ksize", std::vector<int64_t>{1, kh, kw, 1}},
            {"strides", std::vector<int64_t>{1, sh, sw, 1}},
            {"padding", std::string(!pads.empty() ? "EXPLICIT" : same ? "SAME" : "VALID")},
            {"explicit_paddings", explicit_paddings}};
  }
  std::string ToString() const {
    std::string padding = same ? " SAME" : " VALID";
    if (!pads.empty())
      padding = StrCat(" EXPLICIT ", pads[0], ",", pads[1], ",", pads[2], ",", pads[3]);
    return StrCat(shape.ToString(), " k ", kh, "x", kw, " s ", sh, "x", sw, padding);
  }
};

// TensorFlow's output size and leading padding of spatial dim `dim` (1 or 2).
std::pair<int64_t, int64_t> OutAndPad(const PoolCase& p, int dim) {
  int64_t in = p.shape.dim(dim), k = dim == 1 ? p.kh : p.kw, s = dim == 1 ? p.sh : p.sw;
  if (!p.pads.empty()) {
    int64_t before = p.pads[2 * (dim - 1)], after = p.pads[2 * (dim - 1) + 1];
    return {(in + before + after - k) / s + 1, before};
  }
  if (!p.same) return {(in - k) / s + 1, 0};
  int64_t out = (in + s - 1) / s;
  return {out, std::max<int64_t>((out - 1) * s + k - in, 0) / 2};
}

Shape OutputShape(const PoolCase& p) {
  return {p.shape.dim(0), OutAndPad(p, 1).first, OutAndPad(p, 2).first, p.shape.dim(3)};
}

// Calls visit(o, taps) for each output element o (flat index) with the flat
// input indices of its window inside the image, row-major.
template <typename F>
void ForEachWindow(const PoolCase& p, F visit) {
  int64_t N = p.shape.dim(0), H = p.shape.dim(1), W = p.shape.dim(2), C = p.shape.dim(3);
  auto [oh, ph] = OutAndPad(p, 1);
  auto [ow, pw] = OutAndPad(p, 2);
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

const std::vector<DType> kPoolFloats = {DType::kFloat32, DType::kFloat64};

double PoolTolerance(DType dtype) { return dtype == DType::kFloat32 ? 1e-5 : 1e-12; }

// AvgPoolGrad of `g` for p's input shape (a constant int32 [4] input).
Tensor RunAvgPoolGrad(const PoolCase& p, const Tensor& g) {
  std::vector<int32_t> dims(p.shape.dims().begin(), p.shape.dims().end());
  return RunOp1({.op = "AvgPoolGrad", .inputs = {Tensor::FromVector<int32_t>(dims), g},
                 .attrs = p.Attrs(), .const_inputs = {0}});
}

// MaxPoolGrad, MaxPoolGradGrad and AvgPoolGrad of case p against the
// references, on random inputs drawn from `seed` on.
void ExpectGradOpsMatchReferences(const PoolCase& p, DType dtype, uint64_t& seed) {
  double tol = PoolTolerance(dtype);
  Tensor x = RandomTensor(dtype, p.shape, seed++);
  Tensor y = MaxPoolRef(p, x);
  Tensor g = RandomTensor(dtype, y.shape(), seed++);
  Tensor gg = RandomTensor(dtype, p.shape, seed++);
  ExpectClose(Run("MaxPoolGrad", {x, y, g}, p.Attrs()), MaxPoolGradRef(p, x, g), tol, tol);
  ExpectEqual(Run("MaxPoolGradGrad", {x, y, gg}, p.Attrs()), MaxPoolGradGradRef(p, x, gg));
  ExpectClose(RunAvgPoolGrad(p, g), AvgPoolGradRef(p, g), tol, tol);
}

// A SAME case as EXPLICIT with the pads SAME computes: pad_total split
// pad_total / 2 before, the rest after.
PoolCase AsExplicit(const PoolCase& p) {
  PoolCase e = p;
  for (int dim : {1, 2}) {
    int64_t in = p.shape.dim(dim), k = dim == 1 ? p.kh : p.kw, s = dim == 1 ? p.sh : p.sw;
    auto [out, before] = OutAndPad(p, dim);
    int64_t total = std::max<int64_t>((out - 1) * s + k - in, 0);
    e.pads.push_back(before);
    e.pads.push_back(total - before);
  }
  return e;
}

// The SAME cases of Cases() plus windows that overhang odd images at
// stride 2 (the MoDNN split's pools).
std::vector<PoolCase> SameCases() {
  std::vector<PoolCase> cases;
  for (const PoolCase& p : Cases())
    if (p.same) cases.push_back(p);
  for (Shape shape : {Shape{1, 9, 11, 3}, Shape{2, 5, 7, 2}})
    for (int64_t k : {2, 3}) cases.push_back({shape, k, k, 2, 2, true});
  cases.push_back({{1, 13, 3, 4}, 3, 2, 3, 2, true});
  return cases;
}

// Asymmetric pads (each below its window) over odd and even images.
std::vector<PoolCase> ExplicitCases() {
  std::vector<PoolCase> cases;
  const std::vector<std::pair<int64_t, int64_t>> windows = {{2, 3}, {3, 3}, {3, 2}};
  const std::vector<std::pair<int64_t, int64_t>> strides = {{1, 1}, {2, 2}, {3, 1}, {1, 2}};
  const std::vector<std::vector<int64_t>> pad_sets = {
      {0, 2, 1, 0}, {2, 1, 0, 1}, {1, 0, 2, 2}, {0, 0, 0, 1}};
  int variant = 0;
  for (auto [kh, kw] : windows)
    for (auto [sh, sw] : strides)
      for (const auto& pads : pad_sets) {
        Shape shape = ++variant % 2 ? Shape{2, 7, 5, 3} : Shape{1, 4, 6, 1};
        std::vector<int64_t> fit = {std::min(pads[0], kh - 1), std::min(pads[1], kh - 1),
                                    std::min(pads[2], kw - 1), std::min(pads[3], kw - 1)};
        cases.push_back({shape, kh, kw, sh, sw, false, fit});
      }
  return cases;
}

}  // namespace

TEST_CASE("MaxPool and AvgPool match references", "[pool]") {
  uint64_t seed = 1;
  for (DType dtype : kPoolFloats)
    for (const PoolCase& p : Cases()) {
      INFO(DTypeName(dtype) << p.ToString());
      Tensor x = RandomTensor(dtype, p.shape, seed++);
      ExpectEqual(Run("MaxPool", {x}, p.Attrs()), MaxPoolRef(p, x));
      ExpectClose(Run("AvgPool", {x}, p.Attrs()), AvgPoolRef(p, x), PoolTolerance(dtype), PoolTolerance(dtype));
    }
}

TEST_CASE("pooling gradient ops match references", "[pool]") {
  uint64_t seed = 1000;
  for (DType dtype : kPoolFloats)
    for (const PoolCase& p : Cases()) {
      INFO(DTypeName(dtype) << p.ToString());
      ExpectGradOpsMatchReferences(p, dtype, seed);
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

TEST_CASE("AvgPool with EXPLICIT padding does not count the padding", "[pool]") {
  // 3x3 input, 2x2 window, stride 2, pads top 1, right 1: rows [-1, 1) and
  // [1, 3), columns [0, 2) and [2, 4), each clipped to the image.
  PoolCase p{{1, 3, 3, 1}, 2, 2, 2, 2, false, {1, 0, 0, 1}};
  Tensor x = Tensor::FromVector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  ExpectEqual(Run("AvgPool", {x}, p.Attrs()),
              Tensor::FromVector<double>({1.5, 3, 6, 7.5}, {1, 2, 2, 1}));
  ExpectEqual(Run("MaxPool", {x}, p.Attrs()),
              Tensor::FromVector<double>({2, 3, 8, 9}, {1, 2, 2, 1}));
}

TEST_CASE("pooling with SAME's pads given EXPLICIT equals SAME, gradients too", "[pool]") {
  uint64_t seed = 5000;
  for (DType dtype : kPoolFloats)
    for (const PoolCase& same : SameCases()) {
      PoolCase e = AsExplicit(same);
      INFO(DTypeName(dtype) << same.ToString() << " vs" << e.ToString());
      Tensor x = RandomTensor(dtype, same.shape, seed++);
      Tensor y = Run("MaxPool", {x}, same.Attrs());
      Tensor g = RandomTensor(dtype, OutputShape(same), seed++);
      ExpectEqual(Run("AvgPool", {x}, e.Attrs()), Run("AvgPool", {x}, same.Attrs()));
      ExpectEqual(Run("MaxPool", {x}, e.Attrs()), y);
      ExpectEqual(RunAvgPoolGrad(e, g), RunAvgPoolGrad(same, g));
      ExpectEqual(Run("MaxPoolGrad", {x, y, g}, e.Attrs()),
                  Run("MaxPoolGrad", {x, y, g}, same.Attrs()));
    }
}

TEST_CASE("pooling with asymmetric EXPLICIT pads matches references", "[pool]") {
  uint64_t seed = 7000;
  for (DType dtype : kPoolFloats)
    for (const PoolCase& p : ExplicitCases()) {
      INFO(DTypeName(dtype) << p.ToString());
      Tensor x = RandomTensor(dtype, p.shape, seed++);
      ExpectEqual(Run("MaxPool", {x}, p.Attrs()), MaxPoolRef(p, x));
      ExpectClose(Run("AvgPool", {x}, p.Attrs()), AvgPoolRef(p, x), PoolTolerance(dtype),
                  PoolTolerance(dtype));
      ExpectGradOpsMatchReferences(p, dtype, seed);
    }
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
  // (out - 1) * stride + ksize used to wrap around: a window without end.
  ExpectError([&] {
    ops::MaxPool(s.WithOpName("huge"), x, {{1, std::numeric_limits<int64_t>::max(), 1, 1}, {1, 1, 1, 1}, "SAME"});
  }, Code::kInvalidArgument, "MaxPool 'huge': the pooled input is too large");
  ExpectError([&] { ops::MaxPool(s.WithOpName("p4"), x, {{1, 2, 2, 1}, {1, 0, 1, 1}, "SAME"}); },
              Code::kInvalidArgument, "MaxPool 'p4': strides entries must be >= 1, got 0");
  ExpectError([&] { ops::MaxPool(s.WithOpName("p5"), x, {{1, 2, 2, 1}, {1, 1, 1, 1}, "FULL"}); },
              Code::kInvalidArgument,
              "MaxPool 'p5': padding must be SAME, VALID or EXPLICIT, got 'FULL'");
  ExpectError([&] { ops::MaxPool(s.WithOpName("p6"), x, {{1, 5, 2, 1}, {1, 1, 1, 1}, "VALID"}); },
              Code::kInvalidArgument, "MaxPool 'p6': VALID padding needs the window (5)");
  auto g = ops::Placeholder(s.WithOpName("g"), DType::kFloat32, {1, 3, 3, 2});
  ExpectError([&] { ops::MaxPoolGrad(s.WithOpName("p7"), x, g, g, ok); }, Code::kInvalidArgument,
              "MaxPoolGrad 'p7': grad [1,3,3,2] does not match the pooled shape [1,2,2,2]");
}

TEST_CASE("pooling rejects bad explicit_paddings, naming the node and the value", "[pool]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {1, 4, 4, 2});
  auto window = [](std::string padding, std::vector<int64_t> pads, int64_t k = 2) {
    return ops::PoolWindow{{1, k, k, 1}, {1, 1, 1, 1}, std::move(padding), std::move(pads)};
  };
  ExpectError([&] { ops::AvgPool(s.WithOpName("e1"), x, window("EXPLICIT", {})); },
              Code::kInvalidArgument,
              "AvgPool 'e1': explicit_paddings must have 8 entries (before, after per NHWC dim), "
              "got 0: []");
  ExpectError([&] { ops::AvgPool(s.WithOpName("e2"), x, window("EXPLICIT", {1, 1, 1, 1})); },
              Code::kInvalidArgument, "AvgPool 'e2': explicit_paddings must have 8 entries");
  ExpectError(
      [&] { ops::AvgPool(s.WithOpName("e3"), x, window("EXPLICIT", {0, 0, 1, 1, 1, 1, 0, 1})); },
      Code::kInvalidArgument, "AvgPool 'e3': explicit_paddings must be 0 in the batch and "
      "channel dims, got [0,0,1,1,1,1,0,1]");
  ExpectError(
      [&] { ops::AvgPool(s.WithOpName("e4"), x, window("EXPLICIT", {0, 0, 1, -1, 0, 0, 0, 0})); },
      Code::kInvalidArgument,
      "AvgPool 'e4': explicit_paddings must be >= 0, got -1 in [0,0,1,-1,0,0,0,0]");
  ExpectError(
      [&] { ops::AvgPool(s.WithOpName("e5"), x, window("EXPLICIT", {0, 0, 2, 0, 0, 0, 0, 0})); },
      Code::kInvalidArgument, "AvgPool 'e5': explicit_paddings: the height pad before (2) must "
      "be smaller than the window's height (2), or a window would cover padding only");
  ExpectError(
      [&] { ops::MaxPool(s.WithOpName("e6"), x, window("EXPLICIT", {0, 0, 0, 0, 0, 3, 0, 0}, 3)); },
      Code::kInvalidArgument, "MaxPool 'e6': explicit_paddings: the width pad after (3) must be "
      "smaller than the window's width (3)");
  ExpectError(
      [&] { ops::AvgPool(s.WithOpName("e7"), x, window("SAME", {0, 0, 1, 1, 1, 1, 0, 0})); },
      Code::kInvalidArgument, "AvgPool 'e7': explicit_paddings is only allowed with padding "
      "EXPLICIT, got [0,0,1,1,1,1,0,0]");
  ExpectError(
      [&] { ops::AvgPool(s.WithOpName("e8"), x, window("EXPLICIT", {0, 0, 1, 0, 0, 0, 0, 0}, 6)); },
      Code::kInvalidArgument, "AvgPool 'e8': EXPLICIT padding needs the window's height (6) to "
      "fit in the padded input's (4 + 1 + 0)");
  auto g = ops::Placeholder(s.WithOpName("g"), DType::kFloat32, {1, 4, 4, 2});
  ExpectError(
      [&] {
        ops::AvgPoolGrad(s.WithOpName("e9"), Tensor::FromVector<int32_t>({1, 4, 4, 2}), g,
                         window("EXPLICIT", {0, 0, 0, 0, 0, 0, 1, 0}));
      },
      Code::kInvalidArgument, "AvgPoolGrad 'e9': explicit_paddings must be 0 in the batch and "
      "channel dims, got [0,0,0,0,0,0,1,0]");
}

TEST_CASE("pooling kernels check shapes known only at run time", "[pool]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64);
  auto y = ops::MaxPool(s.WithOpName("pool"), x, {{1, 2, 2, 1}, {1, 1, 1, 1}, "VALID"});
  Session session(s);
  ExpectError([&] { session.Run({{x, Tensor::Zeros(DType::kFloat64, {2, 3})}}, {y}); },
              Code::kInvalidArgument, "MaxPool 'pool': input must be NHWC (rank 4), got [2,3]");
  // EXPLICIT pads over an empty image: every window would cover padding only.
  auto avg = ops::AvgPool(s.WithOpName("avg"), x,
                          {{1, 2, 2, 1}, {1, 1, 1, 1}, "EXPLICIT", {0, 0, 1, 1, 0, 0, 0, 0}});
  ExpectError([&] { session.Run({{x, Tensor::Zeros(DType::kFloat64, {1, 0, 3, 1})}}, {avg}); },
              Code::kInvalidArgument, "AvgPool 'avg': EXPLICIT padding needs a non-empty input: "
              "its height is 0, so every window would cover padding only");
}

TEST_CASE("MaxPool of uint8 quantization codes: the largest code, padding never wins", "[pool]") {
  // 3x3 codes, 2x2 window, stride 2, SAME: the bottom and right windows
  // reach into padding, which must not pass for a code (0 is one).
  PoolCase p{{1, 3, 3, 1}, 2, 2, 2, 2, true};
  Tensor x = Tensor::FromVector<uint8_t>({0, 7, 255, 3, 1, 2, 0, 0, 0}, {1, 3, 3, 1});
  ExpectEqual(Run("MaxPool", {x}, p.Attrs()), Tensor::FromVector<uint8_t>({7, 255, 0, 0}, {1, 2, 2, 1}));
}

// Resize ops against naive double-precision references written from
// TensorFlow's coordinate rules (upsizing, downsizing, odd sizes, every
// coordinate mode), a few hand-computed values, the gradient ops as exact
// adjoints (<R x, g> = <x, R^T g>), and errors naming the node.
#include <cmath>

#include <catch2/catch.hpp>

#include "ops/image.h"
#include "ops/state.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

struct Mode {
  bool align_corners, half_pixel;
  AttrMap Attrs() const {
    return {{"align_corners", align_corners}, {"half_pixel_centers", half_pixel}};
  }
};
const std::vector<Mode> kModes = {{false, true}, {true, false}, {false, false}};

double Scale(int64_t in, int64_t out, const Mode& m) {
  return m.align_corners && out > 1 ? (in - 1.0) / (out - 1.0) : static_cast<double>(in) / out;
}

int64_t NearestSource(int64_t o, int64_t in, int64_t out, const Mode& m) {
  double scale = Scale(in, out, m);
  double at = m.half_pixel ? (o + 0.5) * scale : o * scale;
  int64_t i = static_cast<int64_t>(m.align_corners ? std::round(at) : std::floor(at));
  return std::max<int64_t>(0, std::min(i, in - 1));
}

// (lower, upper, weight of upper) of output coordinate o.
std::tuple<int64_t, int64_t, double> LinearSource(int64_t o, int64_t in, int64_t out, const Mode& m) {
  double scale = Scale(in, out, m);
  double at = m.half_pixel ? (o + 0.5) * scale - 0.5 : o * scale;
  int64_t lo = std::max<int64_t>(static_cast<int64_t>(std::floor(at)), 0);
  int64_t hi = std::min<int64_t>(static_cast<int64_t>(std::ceil(at)), in - 1);
  return {lo, hi, at - std::floor(at)};
}

// The resize as an explicit linear map: calls add(out index, in index, weight).
template <typename F>
void ForEachWeight(const Shape& in, int64_t oh, int64_t ow, const Mode& m, bool bilinear, F add) {
  int64_t N = in.dim(0), H = in.dim(1), W = in.dim(2), C = in.dim(3);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t c = 0; c < C; ++c) {
          int64_t o = ((n * oh + i) * ow + j) * C + c;
          auto at = [&](int64_t y, int64_t x) { return ((n * H + y) * W + x) * C + c; };
          if (!bilinear) {
            add(o, at(NearestSource(i, H, oh, m), NearestSource(j, W, ow, m)), 1.0);
            continue;
          }
          auto [y0, y1, ly] = LinearSource(i, H, oh, m);
          auto [x0, x1, lx] = LinearSource(j, W, ow, m);
          add(o, at(y0, x0), (1 - ly) * (1 - lx));
          add(o, at(y0, x1), (1 - ly) * lx);
          add(o, at(y1, x0), ly * (1 - lx));
          add(o, at(y1, x1), ly * lx);
        }
}

Tensor ResizeRef(const Tensor& x, int64_t oh, int64_t ow, const Mode& m, bool bilinear) {
  Tensor y = Tensor::Zeros(DType::kFloat64, {x.dim(0), oh, ow, x.dim(3)});
  ForEachWeight(x.shape(), oh, ow, m, bilinear, [&](int64_t o, int64_t i, double w) {
    y.data<double>()[o] += w * ReadAsDouble(x, i);
  });
  return y.CastTo(x.dtype());
}

Tensor ResizeGradRef(const Tensor& g, const Shape& in, const Mode& m, bool bilinear) {
  Tensor dx = Tensor::Zeros(DType::kFloat64, in);
  ForEachWeight(in, g.dim(1), g.dim(2), m, bilinear, [&](int64_t o, int64_t i, double w) {
    dx.data<double>()[i] += w * ReadAsDouble(g, o);
  });
  return dx.CastTo(g.dtype());
}

Tensor Size(int64_t h, int64_t w) {
  return Tensor::FromVector<int32_t>({static_cast<int32_t>(h), static_cast<int32_t>(w)});
}

}  // namespace

TEST_CASE("resize ops and their gradients match references", "[image]") {
  const std::vector<std::pair<Shape, std::pair<int64_t, int64_t>>> cases = {
      {{1, 2, 3, 1}, {5, 7}}, {{3, 5, 4, 5}, {3, 2}}, {{1, 4, 4, 5}, {4, 4}},
      {{3, 3, 5, 1}, {1, 1}}, {{1, 1, 1, 5}, {3, 2}}, {{1, 7, 3, 2}, {4, 8}}};
  uint64_t seed = 5;
  for (DType dtype : {DType::kFloat32, DType::kFloat64})
    for (const Mode& m : kModes)
      for (const auto& [shape, size] : cases)
        for (bool bilinear : {false, true}) {
          auto [oh, ow] = size;
          INFO(DTypeName(dtype) << shape.ToString() << " -> " << oh << "x" << ow
                                << (bilinear ? " bilinear" : " nearest") << " align "
                                << m.align_corners << " half " << m.half_pixel);
          double tol = dtype == DType::kFloat32 ? 1e-5 : 1e-12;
          Tensor x = RandomTensor(dtype, shape, seed++);
          Tensor g = RandomTensor(dtype, {shape.dim(0), oh, ow, shape.dim(3)}, seed++);
          std::string op = bilinear ? "ResizeBilinear" : "ResizeNearestNeighbor";
          Tensor y = RunOp1({.op = op, .inputs = {x, Size(oh, ow)}, .attrs = m.Attrs(),
                             .const_inputs = {1}});
          ExpectClose(y, ResizeRef(x, oh, ow, m, bilinear), tol, tol);
          Tensor dx = bilinear ? Run("ResizeBilinearGrad", {g, x}, m.Attrs())
                               : RunOp1({.op = "ResizeNearestNeighborGrad",
                                         .inputs = {g, Size(shape.dim(1), shape.dim(2))},
                                         .attrs = m.Attrs(), .const_inputs = {1}});
          ExpectClose(dx, ResizeGradRef(g, shape, m, bilinear), tol, tol);
        }
}

TEST_CASE("resize gives TensorFlow's values in each coordinate mode", "[image]") {
  Tensor row = Tensor::FromVector<double>({0, 1}, {1, 1, 2, 1});
  auto bilinear = [&](int64_t width, Mode m) {
    return RunOp1({.op = "ResizeBilinear", .inputs = {row, Size(1, width)}, .attrs = m.Attrs(),
                   .const_inputs = {1}});
  };
  ExpectClose(bilinear(4, {false, true}), Tensor::FromVector<double>({0, 0.25, 0.75, 1}, {1, 1, 4, 1}));
  ExpectClose(bilinear(3, {true, false}), Tensor::FromVector<double>({0, 0.5, 1}, {1, 1, 3, 1}));
  ExpectClose(bilinear(4, {false, false}), Tensor::FromVector<double>({0, 0.5, 1, 1}, {1, 1, 4, 1}));
  Tensor three = Tensor::FromVector<double>({10, 20, 30}, {1, 1, 3, 1});
  auto nearest = [&](int64_t width, Mode m) {
    return RunOp1({.op = "ResizeNearestNeighbor", .inputs = {three, Size(1, width)},
                   .attrs = m.Attrs(), .const_inputs = {1}});
  };
  // 3 -> 2: half-pixel samples x = 0.75, 2.25; align_corners x = 0, 2; legacy x = 0, 1.5.
  ExpectEqual(nearest(2, {false, true}), Tensor::FromVector<double>({10, 30}, {1, 1, 2, 1}));
  ExpectEqual(nearest(2, {true, false}), Tensor::FromVector<double>({10, 30}, {1, 1, 2, 1}));
  ExpectEqual(nearest(2, {false, false}), Tensor::FromVector<double>({10, 20}, {1, 1, 2, 1}));
}

TEST_CASE("resize rejects bad inputs, naming the node", "[image]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {1, 4, 4, 2});
  auto x3 = ops::Placeholder(s.WithOpName("x3"), DType::kFloat32, {4, 4, 2});
  ExpectError([&] { ops::ResizeBilinear(s.WithOpName("r1"), x3, {2, 2}); }, Code::kInvalidArgument,
              "ResizeBilinear 'r1': images must be NHWC (rank 4), got [4,4,2]");
  ExpectError([&] { ops::ResizeNearestNeighbor(s.WithOpName("r2"), x, {2, 2, 2}); },
              Code::kInvalidArgument, "ResizeNearestNeighbor 'r2': size must be an int32 vector of 2");
  ExpectError([&] { ops::ResizeBilinear(s.WithOpName("r3"), x, {0, 2}); }, Code::kInvalidArgument,
              "ResizeBilinear 'r3': size must be positive, got [0, 2]");
  ExpectError([&] { ops::ResizeBilinear(s.WithOpName("r4"), x, {2, 2},
                                        {.align_corners = true, .half_pixel_centers = true}); },
              Code::kInvalidArgument,
              "ResizeBilinear 'r4': align_corners and half_pixel_centers cannot both be true");
  auto size = ops::Placeholder(s.WithOpName("size"), DType::kInt32, {2});
  auto late = ops::ResizeNearestNeighbor(s.WithOpName("late"), x, size);
  ExpectError([&] { Session(s).Run({{x, Tensor::Zeros(DType::kFloat32, {1, 4, 4, 2})},
                                    {size, Size(-1, 3)}}, {late}); },
              Code::kInvalidArgument, "ResizeNearestNeighbor 'late': size must be 2 positive values");
}

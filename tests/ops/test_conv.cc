// Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter against naive
// 7-nested-loop references in double (odd sizes, strides 1-3, dilations 1-2,
// SAME / VALID / EXPLICIT, groups 1-3, depthwise with multiplier 1 and 2,
// 1x1 filters, chunked im2col, vector and panel edges of the depthwise and
// packed-GEMM paths), their shape-function and run-time errors,
// and Conv2DTranspose against a naive PyTorch-style transposed convolution.
#include <catch2/catch.hpp>

#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

struct ConvCase {
  int64_t n, h, w, c, kh, kw, filter_c, o;
  int sh, sw, dh, dw;
  std::string padding;
  std::vector<int> pads = {};  // top, bottom, left, right for EXPLICIT
};

// The geometry, computed here independently of ops/conv_geometry.cc.
struct Dims {
  int64_t out_h, out_w, pad_top, pad_left;
};

int64_t OutSize(const ConvCase& c, int64_t in, int64_t k, int stride, int dilation,
                int64_t before, int64_t after, int64_t* pad) {
  int64_t window = (k - 1) * dilation + 1;
  if (c.padding == "SAME") {
    int64_t out = (in + stride - 1) / stride;
    *pad = std::max<int64_t>((out - 1) * stride + window - in, 0) / 2;
    return out;
  }
  *pad = c.padding == "VALID" ? 0 : before;
  int64_t padded = c.padding == "VALID" ? in : in + before + after;
  return (padded - window) / stride + 1;
}

Dims DimsOf(const ConvCase& c) {
  Dims d;
  auto p = c.pads.empty() ? std::vector<int>{0, 0, 0, 0} : c.pads;
  d.out_h = OutSize(c, c.h, c.kh, c.sh, c.dh, p[0], p[1], &d.pad_top);
  d.out_w = OutSize(c, c.w, c.kw, c.sw, c.dw, p[2], p[3], &d.pad_left);
  return d;
}

// Calls f(x_index, w_index, y_index) for every (n, oh, ow, o, kh, kw, c)
// whose tap lands inside x: y[n,oh,ow,o] += x[n,ih,iw,g*Cg+c] * w[kh,kw,c,o].
template <typename F>
void ForEachProduct(const ConvCase& c, F f) {
  Dims d = DimsOf(c);
  int64_t groups = c.c / c.filter_c, og = c.o / groups;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t oh = 0; oh < d.out_h; ++oh)
      for (int64_t ow = 0; ow < d.out_w; ++ow)
        for (int64_t o = 0; o < c.o; ++o)
          for (int64_t kh = 0; kh < c.kh; ++kh)
            for (int64_t kw = 0; kw < c.kw; ++kw)
              for (int64_t ci = 0; ci < c.filter_c; ++ci) {
                int64_t ih = oh * c.sh - d.pad_top + kh * c.dh;
                int64_t iw = ow * c.sw - d.pad_left + kw * c.dw;
                if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
                int64_t x = ((n * c.h + ih) * c.w + iw) * c.c + (o / og) * c.filter_c + ci;
                int64_t w = ((kh * c.kw + kw) * c.filter_c + ci) * c.o + o;
                f(x, w, ((n * d.out_h + oh) * d.out_w + ow) * c.o + o);
              }
}

Shape InputShape(const ConvCase& c) { return {c.n, c.h, c.w, c.c}; }
Shape FilterShape(const ConvCase& c) { return {c.kh, c.kw, c.filter_c, c.o}; }
Shape OutputShape(const ConvCase& c) { return {c.n, DimsOf(c).out_h, DimsOf(c).out_w, c.o}; }

// The naive references, in double, cast back to dtype.
enum class Which { kForward, kInput, kFilter };
Tensor Reference(const ConvCase& c, Which which, const Tensor& a, const Tensor& b, DType dtype) {
  Tensor a64 = a.CastTo(DType::kFloat64), b64 = b.CastTo(DType::kFloat64);
  const double *p = a64.data<double>(), *q = b64.data<double>();
  Shape shape = which == Which::kForward ? OutputShape(c)
                : which == Which::kInput ? InputShape(c) : FilterShape(c);
  Tensor out = Tensor::Zeros(DType::kFloat64, shape);
  double* r = out.data<double>();
  ForEachProduct(c, [&](int64_t x, int64_t w, int64_t y) {
    if (which == Which::kForward) r[y] += p[x] * q[w];      // a = x, b = w
    else if (which == Which::kInput) r[x] += p[y] * q[w];   // a = dy, b = w
    else r[w] += p[x] * q[y];                               // a = x, b = dy
  });
  return out.CastTo(dtype);
}

AttrMap AttrsOf(const ConvCase& c) {
  std::vector<int64_t> explicit_paddings;
  if (!c.pads.empty())
    explicit_paddings = {0, 0, c.pads[0], c.pads[1], c.pads[2], c.pads[3], 0, 0};
  return {{"strides", std::vector<int64_t>{1, c.sh, c.sw, 1}},
          {"dilations", std::vector<int64_t>{1, c.dh, c.dw, 1}},
          {"padding", c.padding},
          {"explicit_paddings", explicit_paddings}};
}

Tensor Sizes(const Shape& s) {
  return Tensor::FromVector<int32_t>({static_cast<int32_t>(s.dim(0)), static_cast<int32_t>(s.dim(1)),
                                      static_cast<int32_t>(s.dim(2)), static_cast<int32_t>(s.dim(3))});
}

void CheckCase(const ConvCase& c, DType dtype, uint64_t seed) {
  INFO("input " << InputShape(c).ToString() << " filter " << FilterShape(c).ToString()
                << " strides " << c.sh << "," << c.sw << " dilations " << c.dh << "," << c.dw
                << " " << c.padding << " " << DTypeName(dtype));
  double tol = dtype == DType::kFloat32 ? 2e-4 : 1e-10;
  Tensor x = RandomTensor(dtype, InputShape(c), seed);
  Tensor w = RandomTensor(dtype, FilterShape(c), seed + 1);
  Tensor dy = RandomTensor(dtype, OutputShape(c), seed + 2);
  AttrMap attrs = AttrsOf(c);
  ExpectClose(Run("Conv2D", {x, w}, attrs),
              Reference(c, Which::kForward, x, w, dtype), tol, tol);
  for (bool known_sizes : {true, false}) {  // sizes as a Const, or fed
    std::set<int> consts = known_sizes ? std::set<int>{0} : std::set<int>{};
    ExpectClose(RunOp1({.op = "Conv2DBackpropInput", .inputs = {Sizes(InputShape(c)), w, dy},
                        .attrs = attrs, .const_inputs = consts}),
                Reference(c, Which::kInput, dy, w, dtype), tol, tol);
    consts = known_sizes ? std::set<int>{1} : std::set<int>{};
    ExpectClose(RunOp1({.op = "Conv2DBackpropFilter", .inputs = {x, Sizes(FilterShape(c)), dy},
                        .attrs = attrs, .const_inputs = consts}),
                Reference(c, Which::kFilter, x, dy, dtype), tol, tol);
  }
}

}  // namespace

TEST_CASE("Conv2D and its backprops match naive loops", "[conv]") {
  const std::vector<ConvCase> cases = {
      {1, 5, 7, 3, 3, 3, 3, 4, 1, 1, 1, 1, "SAME"},
      {3, 8, 9, 4, 3, 3, 4, 5, 2, 2, 1, 1, "VALID"},
      {2, 9, 7, 4, 3, 2, 2, 6, 3, 1, 2, 1, "SAME"},                 // 2 groups
      {1, 7, 8, 6, 3, 3, 1, 6, 1, 2, 1, 2, "EXPLICIT", {1, 2, 0, 1}},  // depthwise
      {3, 6, 5, 3, 2, 3, 1, 6, 2, 1, 1, 1, "SAME"},                 // depthwise, multiplier 2
      {2, 10, 9, 3, 3, 3, 1, 3, 3, 2, 2, 2, "VALID"},               // depthwise, stride 3
      {3, 6, 6, 5, 1, 1, 5, 7, 1, 1, 1, 1, "SAME"},                 // pointwise GEMM
      {1, 7, 7, 4, 1, 1, 4, 3, 2, 2, 1, 1, "VALID"},                // strided 1x1
      {1, 5, 5, 6, 1, 1, 2, 6, 1, 1, 1, 1, "EXPLICIT", {1, 1, 1, 1}},  // 1x1, 3 groups, padded
      {2, 11, 13, 6, 5, 3, 3, 4, 2, 3, 2, 1, "EXPLICIT", {2, 1, 3, 0}},
      {1, 4, 4, 2, 5, 5, 2, 3, 1, 1, 1, 1, "SAME"},                 // filter larger than input
      {3, 9, 8, 4, 3, 3, 4, 8, 3, 2, 1, 2, "SAME"},
      {1, 8, 6, 5, 3, 2, 5, 2, 2, 2, 1, 1, "SAME"},
      {2, 20, 300, 32, 3, 3, 32, 4, 1, 1, 1, 1, "SAME"},            // im2col in chunks, threads
      // float filter gradients per filter row: tile and vector edges, strides,
      // row dilation, padding, filter rows that never land inside x
      {2, 9, 11, 13, 3, 3, 13, 17, 2, 1, 2, 1, "SAME"},
      {2, 30, 29, 3, 9, 7, 3, 16, 1, 2, 1, 1, "SAME"},
      {1, 3, 3, 12, 3, 3, 12, 33, 1, 1, 1, 1, "EXPLICIT", {3, 0, 0, 2}},
      {2, 1, 1, 12, 3, 3, 12, 5, 1, 1, 1, 1, "SAME"},
      {3, 19, 19, 25, 3, 3, 25, 54, 1, 1, 1, 1, "SAME"},
      // depthwise, multiplier 1, channels on both sides of the vector blocks
      // (4 vectors, 1 vector, scalar tail), strides, dilation, padding
      {2, 9, 10, 83, 3, 3, 1, 83, 2, 2, 1, 1, "SAME"},
      {1, 7, 6, 40, 3, 3, 1, 40, 1, 1, 2, 2, "SAME"},
      {2, 12, 11, 64, 5, 5, 1, 64, 1, 3, 1, 1, "EXPLICIT", {2, 0, 1, 3}},
      {1, 3, 4, 520, 3, 3, 1, 520, 2, 1, 1, 1, "SAME"},  // rows > 2 KB: the per-tap loops
      // packed GEMM: several column panels, rows packed, k cut into slices
      {2, 7, 9, 70, 1, 1, 70, 300, 1, 1, 1, 1, "VALID"},
      {1, 5, 5, 300, 1, 1, 300, 40, 1, 1, 1, 1, "VALID"},
      {1, 6, 7, 40, 3, 3, 40, 70, 1, 1, 1, 1, "SAME"},
  };
  uint64_t seed = 1;
  for (const ConvCase& c : cases)
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) CheckCase(c, dtype, seed += 3);
}

TEST_CASE("Conv2D reports bad shapes and attrs while building", "[conv]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {1, 5, 5, 3});
  auto f = [&](Shape shape) { return ops::Placeholder(s, DType::kFloat32, shape); };
  ExpectError([&] { ops::Conv2D(s.WithOpName("conv"), x, f({3, 3, 2, 4})); },
              Code::kInvalidArgument,
              "Conv2D 'conv': the input's channels must be a multiple of the filter's in-channels "
              "(dim 2): input [1,5,5,3], filter [3,3,2,4]");
  auto x4 = ops::Placeholder(s.WithOpName("x4"), DType::kFloat32, {1, 5, 5, 4});
  ExpectError([&] { ops::Conv2D(s, x4, f({3, 3, 2, 3})); }, Code::kInvalidArgument,
              "must be divisible by the 2 groups");
  ExpectError([&] { ops::Conv2D(s, x, f({3, 3, 3, 4}), {.strides = {1, 2, 2}}); },
              Code::kInvalidArgument, "strides must have 4 entries (NHWC), got 3");
  ExpectError([&] { ops::Conv2D(s, x, f({3, 3, 3, 4}), {.strides = {2, 1, 1, 1}}); },
              Code::kInvalidArgument, "strides must be 1 in the batch and channel dims");
  ExpectError([&] { ops::Conv2D(s, x, f({3, 3, 3, 4}), {.dilations = {1, 0, 1, 1}}); },
              Code::kInvalidArgument, "dilations must be >= 1");
  // (3 - 1) * 2^62 used to wrap to a negative window that "fit" any input.
  // A graph file may hold any int64; the C++ builder takes ints.
  ExpectError([&] {
    s.WithOpName("huge").AddOp("Conv2D", {x, f({3, 3, 3, 4})},
                               {{"dilations", std::vector<int64_t>{1, int64_t{1} << 62, 1, 1}}});
  }, Code::kInvalidArgument, "Conv2D 'huge': the dilated filter is too large");
  ExpectError([&] { ops::Conv2D(s, x, f({7, 3, 3, 4}), {.padding = "VALID"}); },
              Code::kInvalidArgument,
              "the filter's height window 7 (size 7, dilation 1) is larger than the padded "
              "input's height 5");
  ExpectError([&] { ops::Conv2D(s, x, f({3, 3, 3, 4}), {.dilations = {1, 1, 3, 1}, .padding = "VALID"}); },
              Code::kInvalidArgument, "width window 7 (size 3, dilation 3)");
  ExpectError([&] { ops::Conv2D(s, x, f({3, 3, 3, 4}), {.padding = "FULL"}); },
              Code::kInvalidArgument, "padding must be SAME, VALID or EXPLICIT, got 'FULL'");
  ExpectError([&] { ops::Conv2D(s, x, f({3, 3, 3, 4}), {.explicit_paddings = {0, 0, 1, 1, 1, 1, 0, 0}}); },
              Code::kInvalidArgument, "only allowed with padding EXPLICIT");
  ExpectError([&] { ops::Conv2D(s, x, f({3, 3, 3, 4}), {.padding = "EXPLICIT", .explicit_paddings = {1, 1}}); },
              Code::kInvalidArgument, "explicit_paddings must have 8 entries");
  ExpectError([&] { ops::Conv2D(s, f({5, 5, 3}), f({3, 3, 3, 4})); }, Code::kInvalidArgument,
              "input must be rank 4 (NHWC), got [5,5,3]");
  // Partial shapes carry through; SAME output sizes follow ceil(in / stride).
  auto p = ops::Placeholder(s, DType::kFloat32, {-1, 9, -1, 3});
  CHECK(ops::Conv2D(s, p, f({3, 3, 3, 8}), {.strides = {1, 2, 2, 1}}).shape() == Shape({-1, 5, -1, 8}));
  auto dy = ops::Placeholder(s.WithOpName("dy"), DType::kFloat32, {1, 4, 4, 4});
  ExpectError([&] { ops::Conv2DBackpropInput(s.WithOpName("bpi"), {1, 5, 5, 3}, f({3, 3, 3, 4}), dy); },
              Code::kInvalidArgument,
              "Conv2DBackpropInput 'bpi': out_backprop is [1,4,4,4] but the Conv2D of input "
              "[1,5,5,3] by filter [3,3,3,4] gives [1,5,5,4]");
  ExpectError([&] { ops::Conv2DBackpropFilter(s, x, {3, 3, 3}, dy); }, Code::kInvalidArgument,
              "filter_sizes must be a vector of 4 sizes (NHWC), got shape [3]");
  CHECK(ops::Conv2DBackpropFilter(s, x, {2, 2, 3, 4}, dy, {.padding = "VALID"}).shape() ==
        Shape({2, 2, 3, 4}));
}

TEST_CASE("Conv2D kernels report bad run-time shapes", "[conv]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32);
  auto w = ops::Placeholder(s.WithOpName("w"), DType::kFloat32);
  auto dy = ops::Placeholder(s.WithOpName("dy"), DType::kFloat32);
  auto sizes = ops::Placeholder(s.WithOpName("sizes"), DType::kInt32);
  auto conv = ops::Conv2D(s.WithOpName("conv"), x, w, {.padding = "VALID"});
  auto bpi = ops::Conv2DBackpropInput(s.WithOpName("bpi"), sizes, w, dy);
  auto bpf = ops::Conv2DBackpropFilter(s.WithOpName("bpf"), x, sizes, dy);
  Session session(s);
  auto t = [](Shape shape) { return RandomTensor(DType::kFloat32, shape, 1); };
  ExpectError([&] { session.Run({{x, t({1, 5, 5, 3})}, {w, t({3, 3, 2, 4})}}, {conv}); },
              Code::kInvalidArgument, "Conv2D 'conv': the input's channels must be a multiple");
  ExpectError([&] { session.Run({{x, t({1, 2, 5, 3})}, {w, t({3, 3, 3, 4})}}, {conv}); },
              Code::kInvalidArgument, "larger than the padded input's height 2");
  ExpectError([&] {
    session.Run({{sizes, Tensor::FromVector<int32_t>({1, 5, 5, 3})}, {w, t({3, 3, 3, 4})},
                 {dy, t({1, 5, 4, 4})}}, {bpi});
  }, Code::kInvalidArgument, "Conv2DBackpropInput 'bpi': out_backprop is [1,5,4,4]");
  ExpectError([&] {
    session.Run({{sizes, Tensor::FromVector<int32_t>({1, 5, 5})}, {w, t({3, 3, 3, 4})},
                 {dy, t({1, 5, 5, 4})}}, {bpi});
  }, Code::kInvalidArgument, "input_sizes must be a vector of 4 sizes");
  ExpectError([&] {
    session.Run({{sizes, Tensor::FromVector<int32_t>({3, -3, 3, 4})}, {x, t({1, 5, 5, 3})},
                 {dy, t({1, 5, 5, 4})}}, {bpf});
  }, Code::kInvalidArgument, "filter_sizes must be >= 0");
  Tensor ok = session.Run({{sizes, Tensor::FromVector<int32_t>({3, 3, 3, 4})},
                           {x, t({1, 5, 5, 3})}, {dy, t({1, 5, 5, 4})}}, {bpf})[0];
  CHECK(ok.shape() == Shape({3, 3, 3, 4}));
}

namespace {

// PyTorch's ConvTranspose2d(C, O, k, stride, padding=p, output_padding,
// groups) on NHWC, weight given as [KH, KW, O / groups, C] (= PyTorch's
// [C, O / groups, KH, KW] transposed): for output channel o of group
// g = o / (O / groups) and input channel c of that group,
// out[n, i*sh - ph + kh, j*sw - pw + kw, o] += x[n, i, j, c] * w[kh, kw, o % (O / groups), c].
// Strides, pads and output size as {sh, sw, ph, pw, out_h, out_w}.
Tensor NaiveTransposedConv(const Tensor& x, const Tensor& w, std::vector<int64_t> t,
                           int64_t groups = 1) {
  int64_t sh = t[0], sw = t[1], ph = t[2], pw = t[3], out_h = t[4], out_w = t[5];
  int64_t n = x.dim(0), h = x.dim(1), wd = x.dim(2), c_all = x.dim(3);
  int64_t kh = w.dim(0), kw = w.dim(1), o_group = w.dim(2), o = o_group * groups;
  int64_t c = c_all / groups;  // input channels per group
  Tensor out = Tensor::Zeros(DType::kFloat64, {n, out_h, out_w, o});
  const double *xp = x.data<double>(), *wp = w.data<double>();
  double* y = out.data<double>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < wd; ++j)
        for (int64_t a = 0; a < kh; ++a)
          for (int64_t e = 0; e < kw; ++e)
            for (int64_t oc = 0; oc < o; ++oc)
              for (int64_t ic = 0; ic < c; ++ic) {
                int64_t r = i * sh - ph + a, q = j * sw - pw + e;
                if (r < 0 || r >= out_h || q < 0 || q >= out_w) continue;
                int64_t xc = oc / o_group * c + ic;  // the channel of x in oc's group
                y[((b * out_h + r) * out_w + q) * o + oc] +=
                    xp[((b * h + i) * wd + j) * c_all + xc] *
                    wp[((a * kw + e) * o_group + oc % o_group) * c_all + xc];
              }
  return out;
}

}  // namespace

TEST_CASE("Conv2DTranspose reproduces PyTorch's ConvTranspose2d(k, 2, k/2, output_padding=1)",
          "[conv]") {
  for (int k : {3, 5}) {
    // The counting network's upsampling layer: ConvTranspose2d(c, c, k, stride=2,
    // padding=k//2, output_padding=1) doubles H and W: (in-1)*2 - 2*(k/2) + k + 1 = 2*in.
    Scope s = Scope::NewRootScope();
    int p = k / 2;
    auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64, {-1, 5, 6, 4});
    Tensor wv = RandomTensor(DType::kFloat64, {k, k, 3, 4}, 2);
    auto y = ops::Conv2DTranspose(s.WithOpName("up"), x, wv,
                                  {.strides = {2, 2}, .padding = "EXPLICIT",
                                   .explicit_paddings = {p, p, p, p}, .output_padding = {1, 1}});
    // The batch is known only at run time; height, width and channels are
    // known while building, so a next layer can be built on y.
    CHECK(y.shape() == Shape({-1, 10, 12, 3}));
    Session session(s);
    Tensor xv = RandomTensor(DType::kFloat64, {2, 5, 6, 4}, 1);
    Tensor got = session.Run({{x, xv}}, {y})[0];
    REQUIRE(got.shape() == Shape({2, 10, 12, 3}));
    ExpectClose(got, NaiveTransposedConv(xv, wv, {2, 2, p, p, 10, 12}), 1e-10, 1e-10);
  }
}

TEST_CASE("Conv2DTranspose output sizes for VALID, SAME and an explicit shape", "[conv]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64, {1, 4, 3, 2});
  Tensor wv = RandomTensor(DType::kFloat64, {3, 2, 5, 2}, 2);
  auto valid = ops::Conv2DTranspose(s, x, wv, {.strides = {2, 3}, .padding = "VALID"});
  CHECK(valid.shape() == Shape({1, 9, 8, 5}));  // (4-1)*2 + 3, (3-1)*3 + 2
  auto same = ops::Conv2DTranspose(s, x, wv, {.strides = {2, 2}});
  CHECK(same.shape() == Shape({1, 8, 6, 5}));
  auto given = ops::Conv2DTranspose(s, x, wv, {.strides = {2, 2}, .output_shape = {1, 7, 5, 5}});
  CHECK(given.shape() == Shape({1, 7, 5, 5}));
  ExpectError([&] { ops::Conv2DTranspose(s, x, wv, {.strides = {2, 2}, .output_padding = {2, 0}}); },
              Code::kInvalidArgument, "output_padding must be in [0, stride), got 2 with stride 2");
  Session session(s);
  Tensor xv = RandomTensor(DType::kFloat64, {1, 4, 3, 2}, 1);
  auto out = session.Run({{x, xv}}, {valid, same, given});
  ExpectClose(out[0], NaiveTransposedConv(xv, wv, {2, 3, 0, 0, 9, 8}), 1e-10, 1e-10);
  // SAME pads of the forward conv from 8x6 by 3x2 at stride 2: top 0, left 0;
  // from 7x5: top 1, left 0.
  ExpectClose(out[1], NaiveTransposedConv(xv, wv, {2, 2, 0, 0, 8, 6}), 1e-10, 1e-10);
  ExpectClose(out[2], NaiveTransposedConv(xv, wv, {2, 2, 1, 0, 7, 5}), 1e-10, 1e-10);
}

TEST_CASE("Conv2DTranspose with groups matches PyTorch's grouped ConvTranspose2d", "[conv]") {
  for (int groups : {2, 3}) {
    CAPTURE(groups);
    Scope s = Scope::NewRootScope();
    // x has 6 channels; each group of 6 / groups makes 4 output channels.
    auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64, {-1, 5, 4, 6});
    Tensor wv = RandomTensor(DType::kFloat64, {3, 3, 4, 6}, 2);
    auto y = ops::Conv2DTranspose(s.WithOpName("up"), x, wv,
                                  {.strides = {2, 2}, .padding = "EXPLICIT",
                                   .explicit_paddings = {1, 1, 1, 1}, .output_padding = {1, 1},
                                   .groups = groups});
    CHECK(y.shape() == Shape({-1, 10, 8, 4 * groups}));
    Session session(s);
    Tensor xv = RandomTensor(DType::kFloat64, {2, 5, 4, 6}, 1);
    Tensor got = session.Run({{x, xv}}, {y})[0];
    REQUIRE(got.shape() == Shape({2, 10, 8, 4 * groups}));
    ExpectClose(got, NaiveTransposedConv(xv, wv, {2, 2, 1, 1, 10, 8}, groups), 1e-10, 1e-10);
  }
}

TEST_CASE("Conv2DTranspose rejects groups that do not divide the input channels", "[conv]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {1, 5, 4, 6});
  Tensor wv = RandomTensor(DType::kFloat32, {3, 3, 4, 6}, 2);
  ExpectError([&] { ops::Conv2DTranspose(s, x, wv, {.groups = 0}); }, Code::kInvalidArgument,
              "groups must be >= 1, got 0");
  // 6 input channels in 4 groups: the forward conv's 6 output channels do not split.
  ExpectError([&] { ops::Conv2DTranspose(s, x, wv, {.groups = 4}); }, Code::kInvalidArgument,
              "the input's 6 channels do not split into 4 groups");
}

TEST_CASE("Conv2DTranspose checks an explicit output_shape against filter and groups", "[conv]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64, {1, 4, 3, 6});
  Tensor wv = RandomTensor(DType::kFloat64, {3, 3, 4, 6}, 2);
  auto y = ops::Conv2DTranspose(s, x, wv, {.strides = {2, 2}, .output_shape = {1, 7, 5, 8}, .groups = 2});
  CHECK(y.shape() == Shape({1, 7, 5, 8}));
  Session session(s);
  Tensor xv = RandomTensor(DType::kFloat64, {1, 4, 3, 6}, 1);
  // SAME pads of the forward conv from 7x5 by 3x3 at stride 2: top 1, left 1.
  ExpectClose(session.Run({{x, xv}}, {y})[0], NaiveTransposedConv(xv, wv, {2, 2, 1, 1, 7, 5}, 2),
              1e-10, 1e-10);
  ExpectError([&] { ops::Conv2DTranspose(s, x, wv, {.output_shape = {1, 8, 6, 12}, .groups = 2}); },
              Code::kInvalidArgument,
              "output_shape has 12 channels but the filter [3,3,4,6] in 2 groups makes 8");
}

// MatMul and BatchMatMul against a naive triple loop in double, over odd
// sizes, every transpose flag, batch broadcasting and zero-size dims.
#include <catch2/catch.hpp>

#include "ops/cpu/gemm_long_k.h"
#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

// product of a [m,k] (or [k,m] when ta) and b [k,n] (or [n,k] when tb), all
// row-major doubles at the given offsets.
void NaiveProduct(const double* a, const double* b, double* c, int64_t m, int64_t k, int64_t n,
                  bool ta, bool tb) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += (ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
      c[i * n + j] = sum;
    }
}

Tensor ReferenceMatMul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  Tensor a64 = a.CastTo(DType::kFloat64), b64 = b.CastTo(DType::kFloat64);
  int64_t m = a.dim(ta ? 1 : 0), k = a.dim(ta ? 0 : 1), n = b.dim(tb ? 0 : 1);
  Tensor c(DType::kFloat64, {m, n});
  NaiveProduct(a64.data<double>(), b64.data<double>(), c.data<double>(), m, k, n, ta, tb);
  return c.CastTo(a.dtype());
}

// Batch dims broadcast from the right; each output matrix multiplies the x
// and y matrices whose batch index is the output's, clamped where the dim is 1.
Tensor ReferenceBatchMatMul(const Tensor& x, const Tensor& y, bool ax, bool ay) {
  Tensor x64 = x.CastTo(DType::kFloat64), y64 = y.CastTo(DType::kFloat64);
  int rx = x.rank(), ry = y.rank();
  int64_t m = x.dim(ax ? rx - 1 : rx - 2), k = x.dim(ax ? rx - 2 : rx - 1);
  int64_t n = y.dim(ay ? ry - 2 : ry - 1);
  int rank = std::max(rx, ry) - 2;
  std::vector<int64_t> dims(rank);
  auto dim_of = [&](const Tensor& t, int i) {
    int j = i - (rank - (t.rank() - 2));
    return j >= 0 ? t.dim(j) : int64_t{1};
  };
  for (int i = 0; i < rank; ++i) dims[i] = std::max(dim_of(x, i), dim_of(y, i));
  for (int i = 0; i < rank; ++i)
    if (dim_of(x, i) == 0 || dim_of(y, i) == 0) dims[i] = 0;
  std::vector<int64_t> out_dims = dims;
  out_dims.push_back(m);
  out_dims.push_back(n);
  Tensor out(DType::kFloat64, Shape(out_dims));
  int64_t batches = 1;
  for (int64_t d : dims) batches *= d;
  for (int64_t b = 0; b < batches; ++b) {
    int64_t rest = b, xi = 0, yi = 0, xs = 1, ys = 1;
    for (int i = rank - 1; i >= 0; --i) {
      int64_t pos = rest % dims[i];
      rest /= dims[i];
      xi += (dim_of(x, i) == 1 ? 0 : pos) * xs;
      yi += (dim_of(y, i) == 1 ? 0 : pos) * ys;
      xs *= dim_of(x, i);
      ys *= dim_of(y, i);
    }
    NaiveProduct(x64.data<double>() + xi * m * k, y64.data<double>() + yi * k * n,
                 out.data<double>() + b * m * n, m, k, n, ax, ay);
  }
  return out.CastTo(x.dtype());
}

Shape MatrixShape(int64_t rows, int64_t cols, bool transpose) {
  return transpose ? Shape{cols, rows} : Shape{rows, cols};
}

double Tolerance(DType dtype) { return dtype == DType::kFloat32 ? 1e-4 : 1e-10; }

void CheckMatMul(DType dtype, int64_t m, int64_t k, int64_t n, bool ta, bool tb, uint64_t seed) {
  INFO(DTypeName(dtype) << " m=" << m << " k=" << k << " n=" << n << " ta=" << ta << " tb=" << tb);
  Tensor a = RandomTensor(dtype, MatrixShape(m, k, ta), seed, -3, 3);
  Tensor b = RandomTensor(dtype, MatrixShape(k, n, tb), seed + 1, -3, 3);
  Tensor got = RunOp1({.op = "MatMul", .inputs = {a, b},
                       .attrs = {{"transpose_a", ta}, {"transpose_b", tb}}});
  double tol = Tolerance(dtype);
  ExpectClose(got, ReferenceMatMul(a, b, ta, tb), tol, tol);
}

}  // namespace

TEST_CASE("MatMul matches a naive product for every transpose flag", "[linalg]") {
  const int64_t sizes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 1, 9}, {1, 33, 2}, {13, 31, 11},
                              {64, 48, 80}, {0, 4, 3}, {4, 0, 3}, {4, 3, 0}};
  uint64_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64})
    for (auto& s : sizes)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) CheckMatMul(dtype, s[0], s[1], s[2], ta, tb, seed += 2);
}

TEST_CASE("MatMul splits big products over threads by rows and by columns", "[linalg]") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      CheckMatMul(DType::kFloat32, 301, 203, 157, ta, tb, 7);  // tall: row blocks
      CheckMatMul(DType::kFloat64, 21, 129, 517, ta, tb, 9);   // wide: column blocks
    }
}

TEST_CASE("GemmLongK matches a naive a^T b on odd sizes and thread counts", "[linalg]") {
  // Rows of 12 and vectors of 16 floats: sizes on both sides of each edge;
  // k long enough for several chunks and blocks.
  const int64_t sizes[][3] = {{1, 1, 1},     {5, 64, 3},     {12, 300, 16}, {13, 257, 17},
                              {25, 1000, 33}, {37, 2600, 70}, {3, 5000, 48}, {40, 700, 1}};
  ThreadPool two(2, "test2"), three(3, "test3");
  ForEachCpuIsa([&] {
    uint64_t seed = 11;
    for (auto& s : sizes)
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two, &three}) {
        const int64_t m = s[0], k = s[1], n = s[2];
        INFO("m=" << m << " k=" << k << " n=" << n << " threads=" << (pool ? pool->num_threads() : 0));
        Tensor a = RandomTensor(DType::kFloat32, {k, m}, seed += 2);
        Tensor b = RandomTensor(DType::kFloat32, {k, n}, seed + 1);
        Tensor c(DType::kFloat32, {m, n});
        cpu::GemmLongK(pool, a.data<float>(), b.data<float>(), c.data<float>(), m, k, n);
        // float sums of k products of values in [-1, 1]
        ExpectClose(c, ReferenceMatMul(a, b, true, false), 1e-4, 2e-7 * static_cast<double>(k));
      }
  });
}

TEST_CASE("MatMul with transpose_a and a long inner dimension (filter gradient shape)",
          "[linalg]") {
  for (bool tb : {false, true}) {
    Tensor a = RandomTensor(DType::kFloat32, {3001, 19}, 5);
    Tensor b = RandomTensor(DType::kFloat32, tb ? Shape{35, 3001} : Shape{3001, 35}, 6);
    Tensor got = RunOp1({.op = "MatMul", .inputs = {a, b},
                         .attrs = {{"transpose_a", true}, {"transpose_b", tb}}});
    ExpectClose(got, ReferenceMatMul(a, b, true, tb), 1e-4, 1e-3);
  }
}

TEST_CASE("MatMul reports mismatched shapes when the graph is built", "[linalg]") {
  Scope s = Scope::NewRootScope();
  auto a = ops::Placeholder(s.WithOpName("a"), DType::kFloat32, {32, 100});
  auto b = ops::Placeholder(s.WithOpName("b"), DType::kFloat32, {99, 10});
  ExpectError([&] { ops::MatMul(s.WithOpName("mm"), a, b); }, Code::kInvalidArgument,
              "inner dimensions differ: a is [32,100], b is [99,10]");
  ExpectError([&] { ops::MatMul(s.WithOpName("mm"), a, b, {.transpose_a = true}); },
              Code::kInvalidArgument, "(transpose_a)");
  auto v = ops::Placeholder(s.WithOpName("v"), DType::kFloat32, {5});
  ExpectError([&] { ops::MatMul(s, v, b); }, Code::kInvalidArgument, "must be a matrix (rank 2)");
  auto i = ops::Placeholder(s.WithOpName("i"), DType::kInt32, {99, 10});
  ExpectError([&] { ops::MatMul(s, a, i); }, Code::kInvalidArgument, "is int32 but T is float32");
  // Shapes known only at run time: the kernel checks them.
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32);
  auto y = ops::Placeholder(s.WithOpName("y"), DType::kFloat32);
  auto mm = ops::MatMul(s.WithOpName("late"), x, y, {.transpose_b = true});
  CHECK(mm.shape() == Shape({-1, -1}));
  Session session(s);
  Tensor x_val = RandomTensor(DType::kFloat32, {2, 3}, 1), y_val = RandomTensor(DType::kFloat32, {4, 2}, 2);
  ExpectError([&] { session.Run({{x, x_val}, {y, y_val}}, {mm}); }, Code::kInvalidArgument,
              "inner dimensions differ: a is [2,3], b is [4,2]");
  ExpectError([&] { session.Run({{x, RandomTensor(DType::kFloat32, {6}, 1)}, {y, y_val}}, {mm}); },
              Code::kInvalidArgument, "must be matrices");
  Tensor ok = session.Run({{x, x_val}, {y, RandomTensor(DType::kFloat32, {4, 3}, 3)}}, {mm})[0];
  CHECK(ok.shape() == Shape({2, 4}));
}

TEST_CASE("MatMul builder with literals and partial shapes", "[linalg]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64, {-1, 2});
  auto w = ops::Const(s.WithOpName("w"), Tensor::FromVector<double>({1, 2, 3, 4, 5, 6}, {3, 2}));
  auto y = ops::MatMul(s.WithOpName("y"), x, w, {.transpose_b = true});
  CHECK(y.shape() == Shape({-1, 3}));
  Session session(s);
  Tensor out = session.Run({{x, Tensor::FromVector<double>({1, 1, 2, -1}, {2, 2})}}, {y})[0];
  ExpectEqual(out, Tensor::FromVector<double>({3, 7, 11, 0, 2, 4}, {2, 3}));
}

TEST_CASE("BatchMatMul broadcasts batch dims like numpy", "[linalg]") {
  struct Case {
    std::vector<int64_t> x_batch, y_batch;
    int64_t m, k, n;
  };
  const std::vector<Case> cases = {
      {{}, {}, 3, 4, 5},            {{2}, {2}, 3, 5, 2},  {{2, 1}, {3}, 3, 4, 6},
      {{1}, {4}, 7, 3, 1},          {{5}, {}, 2, 3, 4},   {{}, {3, 2}, 1, 1, 1},
      {{2, 3, 1}, {1, 4}, 2, 3, 2}, {{0}, {1}, 2, 2, 2},  {{3}, {1}, 0, 4, 2},
      {{2}, {2}, 3, 0, 2},          {{9}, {1}, 8, 7, 6},  {{2}, {2}, 70, 90, 80},
  };
  uint64_t seed = 100;
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt32})
    for (const Case& c : cases)
      for (bool ax : {false, true})
        for (bool ay : {false, true}) {
          std::vector<int64_t> xd = c.x_batch, yd = c.y_batch;
          Shape xm = MatrixShape(c.m, c.k, ax), ym = MatrixShape(c.k, c.n, ay);
          xd.insert(xd.end(), xm.dims().begin(), xm.dims().end());
          yd.insert(yd.end(), ym.dims().begin(), ym.dims().end());
          Tensor x = RandomTensor(dtype, Shape(xd), seed++, -2, 2);
          Tensor y = RandomTensor(dtype, Shape(yd), seed++, -2, 2);
          INFO(x.SummaryString() << " x " << y.SummaryString() << " adj_x=" << ax << " adj_y=" << ay);
          Tensor got = RunOp1({.op = "BatchMatMul", .inputs = {x, y},
                               .attrs = {{"adj_x", ax}, {"adj_y", ay}}});
          double tol = Tolerance(dtype);
          ExpectClose(got, ReferenceBatchMatMul(x, y, ax, ay), tol, tol);
        }
}

TEST_CASE("BatchMatMul runs many small products in parallel", "[linalg]") {
  Tensor x = RandomTensor(DType::kFloat32, {37, 9, 12}, 1);
  Tensor y = RandomTensor(DType::kFloat32, {37, 12, 5}, 2);
  ExpectClose(RunOp1({.op = "BatchMatMul", .inputs = {x, y}}), ReferenceBatchMatMul(x, y, false, false),
              1e-4, 1e-4);
}

TEST_CASE("BatchMatMul reports bad shapes", "[linalg]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2, 3, 4});
  auto y = ops::Placeholder(s.WithOpName("y"), DType::kFloat32, {3, 4, 5});
  ExpectError([&] { ops::BatchMatMul(s.WithOpName("bmm"), x, y); }, Code::kInvalidArgument,
              "batch dimensions do not broadcast: x is [2,3,4], y is [3,4,5]");
  auto z = ops::Placeholder(s.WithOpName("z"), DType::kFloat32, {2, 5, 5});
  ExpectError([&] { ops::BatchMatMul(s, x, z); }, Code::kInvalidArgument,
              "inner dimensions differ: x is [2,3,4], y is [2,5,5]");
  ExpectError([&] { ops::BatchMatMul(s, x, z, {.adj_y = true}); }, Code::kInvalidArgument, "(adj_y)");
  auto v = ops::Placeholder(s.WithOpName("v"), DType::kFloat32, {4});
  ExpectError([&] { ops::BatchMatMul(s, v, z); }, Code::kInvalidArgument, "rank >= 2");
  // Partial shapes: known batch dims are still checked and carried through.
  auto p = ops::Placeholder(s.WithOpName("p"), DType::kFloat32, {-1, 3, 4});
  auto q = ops::Placeholder(s.WithOpName("q"), DType::kFloat32, {7, -1, 4, -1});
  auto pq = ops::BatchMatMul(s.WithOpName("pq"), p, q);
  CHECK(pq.shape() == Shape({7, -1, 3, -1}));
  auto r = ops::Placeholder(s.WithOpName("r"), DType::kFloat32, {6, 4, 2});
  CHECK(ops::BatchMatMul(s, p, r).shape() == Shape({6, 3, 2}));
  Session session(s);
  ExpectError([&] {
    session.Run({{p, RandomTensor(DType::kFloat32, {2, 3, 4}, 1)},
                 {q, RandomTensor(DType::kFloat32, {7, 3, 4, 2}, 2)}}, {pq});
  }, Code::kInvalidArgument, "batch dimensions do not broadcast");
  Tensor ok = session.Run({{p, RandomTensor(DType::kFloat32, {5, 3, 4}, 1)},
                           {q, RandomTensor(DType::kFloat32, {7, 1, 4, 2}, 2)}}, {pq})[0];
  CHECK(ok.shape() == Shape({7, 5, 3, 2}));
}

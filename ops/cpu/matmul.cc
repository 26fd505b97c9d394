// CPU MatMul kernel, and the threaded Eigen GEMM behind it (ops/cpu/matmul.h).
//
// Eigen's own threading needs OpenMP; instead each block of the output is one
// single-threaded Eigen product run by ctx.pool(). Splitting by output rows
// means every block packs all of op(b) once: O(k*n) extra copying against
// O(m*n*k/threads) arithmetic, negligible for the sizes that get split.
// Float products a^T * b with a long k and a small output (convolution filter
// gradients) go to GemmLongK instead (ops/cpu/gemm_long_k.h).
#define EIGEN_DONT_PARALLELIZE  // never let Eigen start threads of its own
#include "ops/cpu/matmul.h"

#include <Eigen/Core>
#include <algorithm>
#include <type_traits>

#include "graph/kernel.h"
#include "ops/cpu/gemm_long_k.h"

namespace dflow {
namespace cpu {
namespace {

// A block of a logical matrix stored in a row-major buffer, seen either
// directly (row_major) or through a transpose (column-major, same strides).
template <typename T>
struct MatrixView {
  const T* data;
  int64_t rows, cols;
  int64_t stride;  // elements between consecutive rows (row-major) or columns
  bool row_major;

  MatrixView Rows(int64_t begin, int64_t end) const {
    return {data + (row_major ? begin * stride : begin), end - begin, cols, stride, row_major};
  }
  MatrixView Cols(int64_t begin, int64_t end) const {
    return {data + (row_major ? begin : begin * stride), rows, end - begin, stride, row_major};
  }
};

template <typename T, int Order>
using ConstMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order>,
                            Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
using OutMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                          Eigen::Unaligned, Eigen::OuterStride<>>;

template <typename T, int Order>
ConstMap<T, Order> AsEigen(const MatrixView<T>& v) {
  return ConstMap<T, Order>(v.data, v.rows, v.cols, Eigen::OuterStride<>(v.stride));
}

// c[lhs.rows, rhs.cols] (row stride ldc) = lhs * rhs on this thread.
template <typename T>
void GemmBlock(const MatrixView<T>& lhs, const MatrixView<T>& rhs, T* c, int64_t ldc) {
  OutMap<T> out(c, lhs.rows, rhs.cols, Eigen::OuterStride<>(ldc));
  auto with_rhs = [&](const auto& l) {
    if (rhs.row_major) out.noalias() = l * AsEigen<T, Eigen::RowMajor>(rhs);
    else out.noalias() = l * AsEigen<T, Eigen::ColMajor>(rhs);
  };
  if (lhs.row_major) with_rhs(AsEigen<T, Eigen::RowMajor>(lhs));
  else with_rhs(AsEigen<T, Eigen::ColMajor>(lhs));
}

}  // namespace

template <typename T>
void Gemm(ThreadPool* pool, const T* a, const T* b, T* c, int64_t m, int64_t k, int64_t n,
          bool transpose_a, bool transpose_b) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: all zeros
    std::fill(c, c + m * n, T(0));
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (transpose_a && !transpose_b && LongKPays(m, k, n)) return GemmLongK(pool, a, b, c, m, k, n);
  }
  MatrixView<T> lhs{a, m, k, transpose_a ? m : k, !transpose_a};
  MatrixView<T> rhs{b, k, n, transpose_b ? k : n, !transpose_b};
  // Split the longer side of the output so blocks stay well shaped for GEMM.
  bool by_rows = m >= n;
  int64_t extent = by_rows ? m : n;
  int64_t work = m * n * k;
  constexpr int64_t kMinExtentPerBlock = 16;
  int64_t blocks = pool ? pool->num_threads() : 1;
  blocks = std::min({blocks, work / kMinGemmWorkPerThread, extent / kMinExtentPerBlock});
  if (blocks <= 1) {
    GemmBlock(lhs, rhs, c, n);
    return;
  }
  pool->ParallelFor(blocks, work / blocks, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      int64_t begin = extent * block / blocks, end = extent * (block + 1) / blocks;
      if (by_rows) GemmBlock(lhs.Rows(begin, end), rhs, c + begin * n, n);
      else GemmBlock(lhs, rhs.Cols(begin, end), c + begin, n);
    }
  });
}

template void Gemm<float>(ThreadPool*, const float*, const float*, float*, int64_t, int64_t,
                          int64_t, bool, bool);
template void Gemm<double>(ThreadPool*, const double*, const double*, double*, int64_t, int64_t,
                           int64_t, bool, bool);
template void Gemm<int32_t>(ThreadPool*, const int32_t*, const int32_t*, int32_t*, int64_t,
                            int64_t, int64_t, bool, bool);
template void Gemm<int64_t>(ThreadPool*, const int64_t*, const int64_t*, int64_t*, int64_t,
                            int64_t, int64_t, bool, bool);

}  // namespace cpu

namespace {

template <typename T>
class MatMulKernel : public OpKernel {
 public:
  explicit MatMulKernel(const Node& node)
      : OpKernel(node),
        transpose_a_(node.attr<bool>("transpose_a")),
        transpose_b_(node.attr<bool>("transpose_b")) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    DFLOW_REQUIRE(a.rank() == 2 && b.rank() == 2, node().Describe(),
                  ": inputs must be matrices, got a ", a.shape().ToString(), ", b ",
                  b.shape().ToString());
    int64_t m = a.dim(transpose_a_ ? 1 : 0), k = a.dim(transpose_a_ ? 0 : 1);
    int64_t kb = b.dim(transpose_b_ ? 1 : 0), n = b.dim(transpose_b_ ? 0 : 1);
    DFLOW_REQUIRE(k == kb, node().Describe(), ": inner dimensions differ: a is ",
                  a.shape().ToString(), ", b is ", b.shape().ToString());
    Tensor& out = ctx.allocate_output(0, Shape{m, n});
    cpu::Gemm<T>(&ctx.pool(), a.data<T>(), b.data<T>(), out.data<T>(), m, k, n, transpose_a_,
                 transpose_b_);
  }

 private:
  bool transpose_a_, transpose_b_;
};

REGISTER_KERNEL_FOR_TYPES("MatMul", "CPU", MatMulKernel, float, double, int32_t, int64_t);

}  // namespace
}  // namespace dflow

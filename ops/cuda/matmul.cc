// GPU MatMul and BatchMatMul on cuBLAS (float32, float64).
//
// cuBLAS is column-major and dflow row-major. A row-major [r, c] buffer read
// column-major is its transpose, so C = op(A) op(B) is computed as
// C^T = op(B)^T op(A)^T: swap the operands and m/n, keep each operand's own
// transpose flag, and every leading dimension is a row length.
#include <cublas_v2.h>

#include "ops/cuda/kernel_util.h"

namespace dflow {
namespace {

// One product shape: op(A) is [m, k], op(B) is [k, n], C is [m, n].
struct GemmShape {
  int64_t m, n, k;
  bool transpose_a, transpose_b;
  // Row-major strides between batch entries (0: the same matrix for all).
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
};

cublasStatus_t Gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const float* alpha, const float* a, int lda, long long sa,
                    const float* b, int ldb, long long sb, const float* beta, float* c, int ldc,
                    long long sc, int batch) {
  return cublasSgemmStridedBatched(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c,
                                   ldc, sc, batch);
}
cublasStatus_t Gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const double* alpha, const double* a, int lda, long long sa,
                    const double* b, int ldb, long long sb, const double* beta, double* c,
                    int ldc, long long sc, int batch) {
  return cublasDgemmStridedBatched(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c,
                                   ldc, sc, batch);
}

template <typename T>
void RunGemm(OpKernelContext& ctx, const GemmShape& g, const T* a, const T* b, T* c) {
  const std::string context = ctx.node().Describe();
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  if (g.k == 0) {  // an empty sum: zeros, without asking cuBLAS about k = 0
    DFLOW_CUDA(cudaMemsetAsync(c, 0, sizeof(T) * g.m * g.n * g.batch, cuda::Stream(ctx)), context);
    return;
  }
  constexpr int64_t kIntMax = 2147483647;
  if (g.m > kIntMax || g.n > kIntMax || g.k > kIntMax || g.batch > kIntMax)
    Fail(Code::kUnimplemented, context, ": cuBLAS takes int dimensions; got m=", g.m, " n=", g.n,
         " k=", g.k);
  const T one = 1, zero = 0;
  cublasOperation_t op_a = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_b = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  int lda = static_cast<int>(g.transpose_a ? g.m : g.k);
  int ldb = static_cast<int>(g.transpose_b ? g.k : g.n);
  cuda::Gpu(ctx).WithCublas(context, [&](cublasHandle_t handle) {
    DFLOW_CUDA(Gemm(handle, op_b, op_a, static_cast<int>(g.n), static_cast<int>(g.m),
                    static_cast<int>(g.k), &one, b, ldb, g.stride_b, a, lda, g.stride_a, &zero, c,
                    static_cast<int>(g.n), g.stride_c, static_cast<int>(g.batch)),
               context);
  });
}

template <typename T>
class GpuMatMulKernel : public OpKernel {
 public:
  explicit GpuMatMulKernel(const Node& node)
      : OpKernel(node), transpose_a_(node.attr<bool>("transpose_a")),
        transpose_b_(node.attr<bool>("transpose_b")) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    DFLOW_REQUIRE(a.rank() == 2 && b.rank() == 2, node().Describe(), ": MatMul needs matrices, got ",
                  a.shape().ToString(), " and ", b.shape().ToString());
    GemmShape g{transpose_a_ ? a.dim(1) : a.dim(0), transpose_b_ ? b.dim(0) : b.dim(1),
                transpose_a_ ? a.dim(0) : a.dim(1), transpose_a_, transpose_b_};
    int64_t kb = transpose_b_ ? b.dim(1) : b.dim(0);
    DFLOW_REQUIRE(g.k == kb, node().Describe(), ": inner dimensions differ: a is ",
                  a.shape().ToString(), ", b is ", b.shape().ToString());
    Tensor& c = ctx.allocate_output(0, Shape{g.m, g.n});
    RunGemm<T>(ctx, g, a.data<T>(), b.data<T>(), c.data<T>());
  }

 private:
  bool transpose_a_, transpose_b_;
};

// Batch dims: equal on both sides, or all-ones on one side (that matrix is
// reused with stride 0). Other broadcasts are left to the CPU kernel.
template <typename T>
class GpuBatchMatMulKernel : public OpKernel {
 public:
  explicit GpuBatchMatMulKernel(const Node& node)
      : OpKernel(node), adj_x_(node.attr<bool>("adj_x")), adj_y_(node.attr<bool>("adj_y")) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    DFLOW_REQUIRE(x.rank() >= 2 && y.rank() >= 2, node().Describe(),
                  ": BatchMatMul needs rank >= 2, got ", x.shape().ToString(), " and ",
                  y.shape().ToString());
    int xr = x.rank(), yr = y.rank();
    GemmShape g{adj_x_ ? x.dim(xr - 1) : x.dim(xr - 2), adj_y_ ? y.dim(yr - 2) : y.dim(yr - 1),
                adj_x_ ? x.dim(xr - 2) : x.dim(xr - 1), adj_x_, adj_y_};
    int64_t ky = adj_y_ ? y.dim(yr - 1) : y.dim(yr - 2);
    DFLOW_REQUIRE(g.k == ky, node().Describe(), ": inner dimensions differ: x is ",
                  x.shape().ToString(), ", y is ", y.shape().ToString());
    std::vector<int64_t> x_batch(x.shape().dims().begin(), x.shape().dims().end() - 2);
    std::vector<int64_t> y_batch(y.shape().dims().begin(), y.shape().dims().end() - 2);
    int64_t x_count = Shape(x_batch).NumElements(), y_count = Shape(y_batch).NumElements();
    std::vector<int64_t> out_dims;
    if (x_batch == y_batch || y_count == 1) out_dims = x_batch;
    else if (x_count == 1) out_dims = y_batch;
    else
      Fail(Code::kUnimplemented, node().Describe(), ": the GPU BatchMatMul needs equal batch dims "
           "or a single matrix on one side, got ", x.shape().ToString(), " and ", y.shape().ToString());
    // A single matrix given with more leading ones than the other side still
    // yields the longer batch rank, as numpy broadcasting does.
    if (x_batch.size() > out_dims.size() || y_batch.size() > out_dims.size())
      out_dims.insert(out_dims.begin(), std::max(x_batch.size(), y_batch.size()) - out_dims.size(), 1);
    g.batch = Shape(out_dims).NumElements();
    g.stride_a = x_count == 1 ? 0 : g.m * g.k;
    g.stride_b = y_count == 1 ? 0 : g.k * g.n;
    g.stride_c = g.m * g.n;
    out_dims.push_back(g.m);
    out_dims.push_back(g.n);
    Tensor& out = ctx.allocate_output(0, Shape(out_dims));
    RunGemm<T>(ctx, g, x.data<T>(), y.data<T>(), out.data<T>());
  }

 private:
  bool adj_x_, adj_y_;
};

REGISTER_KERNEL_FOR_TYPES("MatMul", "GPU", GpuMatMulKernel, float, double);
REGISTER_KERNEL_FOR_TYPES("BatchMatMul", "GPU", GpuBatchMatMulKernel, float, double);

}  // namespace
}  // namespace dflow

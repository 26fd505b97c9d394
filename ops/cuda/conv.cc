// GPU OpKernels of Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter and
// _FusedConv2D (float32, NHWC), as im2col + cuBLAS GEMM per chunk of images,
// one batched GEMM over the groups:
//   y_g[M, Og]     = cols_g[M, P] * w_g[P, Og]
//   dcols_g[M, P]  = dy_g[M, Og] * w_g^T            then col2im -> dx
//   dw_g[P, Og]   += cols_g^T[P, M] * dy_g[M, Og]   summed over the chunks
// with M the chunk's output pixels, P = KH*KW*Cg, and w_g, y_g, dy_g group
// g's columns of the [P, O] filter and [M, O] outputs (leading dimension O).
// Depthwise convolutions use the direct kernels instead. Kernels: conv.cu.
#include <algorithm>

#include "ops/conv.h"
#include "ops/cpu/conv_util.h"
#include "ops/cuda/conv_launch.h"
#include "ops/cuda/kernel_util.h"
#include "ops/cuda/launch.h"

namespace dflow {
namespace {

constexpr int64_t kColumnBytes = int64_t{64} << 20;  // im2col buffer per chunk, about

cuda::ConvShape Flatten(const ConvGeometry& g) {
  return {g.batch,   g.in_h,     g.in_w,      g.in_c,     g.k_h,      g.k_w,
          g.filter_c, g.out_c,   g.groups,    g.out_h,    g.out_w,    g.pad_top,
          g.pad_left, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w};
}

// Row-major C[m, n] = op(A)[m, k] * op(B)[k, n] + beta * C, `batch` times,
// with each operand's row length (ld) and element stride between batches.
struct RowMajorGemm {
  int64_t m, n, k;
  bool transpose_a, transpose_b;
  int64_t lda, ldb, ldc, stride_a, stride_b, stride_c, batch;
  float beta;
};

// cuBLAS is column-major: C^T = op(B)^T op(A)^T (see ops/cuda/matmul.cc).
void RunGemm(OpKernelContext& ctx, const RowMajorGemm& g, const float* a, const float* b, float* c) {
  const std::string context = ctx.node().Describe();
  for (int64_t v : {g.m, g.n, g.k, g.lda, g.ldb, g.ldc, g.batch})
    DFLOW_REQUIRE(v <= 2147483647, context, ": a GEMM of this convolution exceeds cuBLAS's int "
                  "sizes (m=", g.m, " n=", g.n, " k=", g.k, ")");
  const float one = 1;
  cuda::Gpu(ctx).WithCublas(context, [&](cublasHandle_t handle) {
    DFLOW_CUDA(cublasSgemmStridedBatched(
                   handle, g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                   g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(g.n),
                   static_cast<int>(g.m), static_cast<int>(g.k), &one, b, static_cast<int>(g.ldb),
                   g.stride_b, a, static_cast<int>(g.lda), g.stride_a, &g.beta, c,
                   static_cast<int>(g.ldc), g.stride_c, static_cast<int>(g.batch)),
               context);
  });
}

// Images per chunk, so that the chunk's im2col matrices stay near kColumnBytes.
int64_t ImagesPerChunk(const ConvGeometry& g) {
  int64_t per_image = g.groups * g.out_h * g.out_w * g.k_h * g.k_w * g.filter_c * 4;
  return std::clamp<int64_t>(per_image > 0 ? kColumnBytes / per_image : g.batch, 1,
                             std::max<int64_t>(g.batch, 1));
}

// Zeroes t: the output of a convolution whose sums are all empty.
void Zero(OpKernelContext& ctx, Tensor& t) {
  DFLOW_CUDA(cudaMemsetAsync(t.raw_data(), 0, t.TotalBytes(), cuda::Stream(ctx)), ctx.node().Describe());
}

// A scratch buffer of `count` floats on the kernel's GPU (stream-ordered reuse).
Tensor Scratch(OpKernelContext& ctx, int64_t count) {
  return Tensor(DType::kFloat32, Shape{count}, ctx.device().allocator());
}

// Calls fn(first, images, cols) per chunk of images with their im2col matrices
// filled from x (or left unfilled when x is null: backprop input writes them).
template <typename Fn>
void ForEachChunk(OpKernelContext& ctx, const ConvGeometry& g, const float* x, const Fn& fn) {
  const cuda::ConvShape shape = Flatten(g);
  const int64_t chunk = ImagesPerChunk(g);
  Tensor cols = Scratch(ctx, g.groups * chunk * g.out_h * g.out_w * shape.patch());
  for (int64_t first = 0; first < g.batch; first += chunk) {
    int64_t images = std::min(chunk, g.batch - first);
    if (x) {
      cuda::LaunchIm2Col(cuda::Stream(ctx), shape, x, first, images, cols.data<float>());
      cuda::CheckLaunch(ctx, "Im2Col");
    }
    fn(first, images, cols.data<float>());
  }
}

void ConvForward(OpKernelContext& ctx, const ConvGeometry& g, const float* x, const float* w,
                 float* y) {
  if (g.depthwise()) {
    cuda::LaunchDepthwiseConv(cuda::Stream(ctx), Flatten(g), x, w, y);
    return cuda::CheckLaunch(ctx, "DepthwiseConv");
  }
  const int64_t patch = g.k_h * g.k_w * g.filter_c, og = g.group_out_c();
  ForEachChunk(ctx, g, x, [&](int64_t first, int64_t images, const float* cols) {
    const int64_t rows = images * g.out_h * g.out_w;
    RunGemm(ctx, {rows, og, patch, false, false, patch, g.out_c, g.out_c, rows * patch, og, og,
                  g.groups, 0.0f},
            cols, w, y + first * g.out_h * g.out_w * g.out_c);
  });
}

class GpuConv2DKernel : public OpKernel {
 public:
  explicit GpuConv2DKernel(const Node& node) : OpKernel(node), params_(ConvParamsOf(node)) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    ConvGeometry g = cpu::KernelGeometry(node(), params_, x.shape(), w.shape());
    Tensor& y = ctx.allocate_output(0, g.output_shape());
    if (y.NumElements() == 0) return;
    if (x.NumElements() == 0 || w.NumElements() == 0) return Zero(ctx, y);
    ConvForward(ctx, g, x.data<float>(), w.data<float>(), y.data<float>());
  }

 private:
  ConvParams params_;
};

// Conv2D, then the bias and the activation in place.
class GpuFusedConv2DKernel : public OpKernel {
 public:
  explicit GpuFusedConv2DKernel(const Node& node)
      : OpKernel(node), params_(ConvParamsOf(node)),
        activation_(ParseConvActivation(node.attr<std::string>("activation"))) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor& bias = ctx.input(2);
    ConvGeometry g = cpu::KernelGeometry(node(), params_, x.shape(), w.shape());
    DFLOW_REQUIRE(bias.rank() == 1 && bias.dim(0) == g.out_c, node().Describe(), ": bias ",
                  bias.shape().ToString(), " must be a vector of the ", g.out_c, " output channels");
    Tensor& y = ctx.allocate_output(0, g.output_shape());
    if (y.NumElements() == 0) return;
    cudaStream_t stream = cuda::Stream(ctx);
    if (x.NumElements() == 0 || w.NumElements() == 0)
      Zero(ctx, y);
    else
      ConvForward(ctx, g, x.data<float>(), w.data<float>(), y.data<float>());
    float* out = y.data<float>();
    cuda::LaunchBiasAdd(stream, out, bias.data<float>(), out, y.NumElements(), g.out_c);
    if (activation_ != ConvActivation::kNone)
      cuda::LaunchUnary(stream, activation_ == ConvActivation::kRelu ? cuda::UnaryFn::kRelu
                                                                     : cuda::UnaryFn::kRelu6,
                        out, out, y.NumElements());
    cuda::CheckLaunch(ctx, "FusedConv2D epilogue");
  }

 private:
  ConvParams params_;
  ConvActivation activation_;
};

class GpuConv2DBackpropInputKernel : public OpKernel {
 public:
  explicit GpuConv2DBackpropInputKernel(const Node& node)
      : OpKernel(node), params_(ConvParamsOf(node)) {}
  void Compute(OpKernelContext& ctx) const override {
    Shape input = cpu::SizesInput(node(), cuda::HostInput(ctx, 0), "input_sizes");
    const Tensor& w = ctx.input(1);
    const Tensor& dy = ctx.input(2);
    ConvGeometry g = cpu::KernelGeometry(node(), params_, input, w.shape());
    cpu::CheckKernelOutBackprop(node(), g, input, w.shape(), dy.shape());
    Tensor& dx = ctx.allocate_output(0, input);
    if (dx.NumElements() == 0) return;
    cudaStream_t stream = cuda::Stream(ctx);
    if (dy.NumElements() == 0 || w.NumElements() == 0) return Zero(ctx, dx);
    if (g.depthwise()) {
      cuda::LaunchDepthwiseBackpropInput(stream, Flatten(g), w.data<float>(), dy.data<float>(),
                                         dx.data<float>());
      return cuda::CheckLaunch(ctx, "DepthwiseBackpropInput");
    }
    const int64_t patch = g.k_h * g.k_w * g.filter_c, og = g.group_out_c();
    ForEachChunk(ctx, g, nullptr, [&](int64_t first, int64_t images, float* cols) {
      const int64_t rows = images * g.out_h * g.out_w;
      RunGemm(ctx, {rows, patch, og, false, true, g.out_c, g.out_c, patch, og, og, rows * patch,
                    g.groups, 0.0f},
              dy.data<float>() + first * g.out_h * g.out_w * g.out_c, w.data<float>(), cols);
      cuda::LaunchCol2Im(stream, Flatten(g), cols, first, images, dx.data<float>());
      cuda::CheckLaunch(ctx, "Col2Im");
    });
  }

 private:
  ConvParams params_;
};

class GpuConv2DBackpropFilterKernel : public OpKernel {
 public:
  explicit GpuConv2DBackpropFilterKernel(const Node& node)
      : OpKernel(node), params_(ConvParamsOf(node)) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Shape filter = cpu::SizesInput(node(), cuda::HostInput(ctx, 1), "filter_sizes");
    const Tensor& dy = ctx.input(2);
    ConvGeometry g = cpu::KernelGeometry(node(), params_, x.shape(), filter);
    cpu::CheckKernelOutBackprop(node(), g, x.shape(), filter, dy.shape());
    Tensor& dw = ctx.allocate_output(0, filter);
    if (dw.NumElements() == 0) return;
    cudaStream_t stream = cuda::Stream(ctx);
    if (dy.NumElements() == 0 || x.NumElements() == 0) return Zero(ctx, dw);
    if (g.depthwise()) {
      cuda::LaunchDepthwiseBackpropFilter(stream, Flatten(g), x.data<float>(), dy.data<float>(),
                                          dw.data<float>());
      return cuda::CheckLaunch(ctx, "DepthwiseBackpropFilter");
    }
    const int64_t patch = g.k_h * g.k_w * g.filter_c, og = g.group_out_c();
    ForEachChunk(ctx, g, x.data<float>(), [&](int64_t first, int64_t images, const float* cols) {
      const int64_t rows = images * g.out_h * g.out_w;
      RunGemm(ctx, {patch, og, rows, true, false, patch, g.out_c, g.out_c, rows * patch, og, og,
                    g.groups, first == 0 ? 0.0f : 1.0f},
              cols, dy.data<float>() + first * g.out_h * g.out_w * g.out_c, dw.data<float>());
    });
  }

 private:
  ConvParams params_;
};

[[maybe_unused]] const KernelRegistrar kConvKernels[] = {
    cuda::Float32Kernel<GpuConv2DKernel>("Conv2D"),
    cuda::Float32Kernel<GpuFusedConv2DKernel>("_FusedConv2D"),
    cuda::Float32Kernel<GpuConv2DBackpropInputKernel>("Conv2DBackpropInput"),
    cuda::Float32Kernel<GpuConv2DBackpropFilterKernel>("Conv2DBackpropFilter"),
};

}  // namespace
}  // namespace dflow

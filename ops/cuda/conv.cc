// GPU OpKernels of Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter and
// _FusedConv2D (float32, NHWC). Each convolution is the GEMM of its im2col
// matrices, one per group g:
//   y_g[M, Og]     = cols_g[M, P] * w_g[P, Og]
//   dcols_g[M, P]  = dy_g[M, Og] * w_g^T            then col2im -> dx
//   dw_g[P, Og]    = cols_g^T[P, M] * dy_g[M, Og]
// with M the output pixels, P = KH*KW*Cg, and w_g, y_g, dy_g group g's
// columns of the [P, O] filter and [M, O] outputs (leading dimension O),
// computed one of four ways (ChooseAlgorithm):
//   - depthwise convolutions: direct kernels (conv.cu);
//   - pointwise ones (1x1, stride 1, no padding): x is already cols, so
//     cuBLAS multiplies the tensors themselves;
//   - otherwise an implicit GEMM (conv_gemm.h): the tiles of cols are read
//     from x as the GEMM needs them, never written out;
//   - or, where the implicit GEMM cannot go (more than 2^31 elements, a
//     gather over more than 16 taps), im2col + cuBLAS per chunk of images.
// DFLOW_CONV_ALGORITHM=implicit|im2col chooses between the last two for
// every convolution (benchmarks compare them; the default is automatic).
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>

#include "ops/conv.h"
#include "ops/cpu/conv_util.h"
#include "ops/cuda/conv_launch.h"
#include "ops/cuda/kernel_util.h"
#include "ops/cuda/launch.h"

namespace dflow {
namespace {

constexpr int64_t kColumnBytes = int64_t{64} << 20;  // im2col buffer per chunk, about

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

enum class ConvAlgorithm { kDepthwise, kPointwise, kImplicitGemm, kIm2col };
enum class ConvPass { kForward, kInput, kFilter };

// What DFLOW_CONV_ALGORITHM asks for: implicit GEMM, im2col, or automatic.
enum class Forced { kAuto, kImplicitGemm, kIm2col };
Forced ForcedAlgorithm() {
  const char* value = std::getenv("DFLOW_CONV_ALGORITHM");
  std::string name = value ? value : "";
  if (name == "implicit") return Forced::kImplicitGemm;
  if (name == "im2col") return Forced::kIm2col;
  DFLOW_REQUIRE(name.empty() || name == "auto", "DFLOW_CONV_ALGORITHM='", name,
                "' is not one of implicit, im2col, auto");
  return Forced::kAuto;
}

bool Pointwise(const ConvGeometry& g) {
  return g.k_h == 1 && g.k_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 &&
         g.pad_left == 0 && g.out_h == g.in_h && g.out_w == g.in_w;
}

// The implicit GEMM indexes in 32 bits and gathers over at most
// ConvInputGemm::kMaxTaps taps per dim.
bool ImplicitGemmFits(const ConvGeometry& g, ConvPass pass) {
  constexpr int64_t kLimit = std::numeric_limits<int32_t>::max();
  const int64_t per_group_outputs = std::max(g.out_h * g.out_w, g.in_h * g.in_w) * g.batch *
                                    std::max(g.out_c, g.in_c);
  return g.batch * g.in_h * g.in_w * g.in_c < kLimit &&
         g.batch * g.out_h * g.out_w * g.out_c < kLimit &&
         g.k_h * g.k_w * g.filter_c * g.out_c < kLimit && per_group_outputs < kLimit &&
         (pass != ConvPass::kInput ||
          (g.k_h <= cuda::ConvInputGemm::kMaxTaps && g.k_w <= cuda::ConvInputGemm::kMaxTaps));
}

ConvAlgorithm ChooseAlgorithm(const ConvGeometry& g, ConvPass pass, Forced forced) {
  if (g.depthwise()) return ConvAlgorithm::kDepthwise;
  if (Pointwise(g) && g.batch * g.in_h * g.in_w <= std::numeric_limits<int32_t>::max())
    return ConvAlgorithm::kPointwise;
  // Measured layer by layer on an H200 (bench_conv_gpu, bench/RESULTS.md):
  // the implicit GEMM was as fast as im2col + cuBLAS or faster on every
  // other convolution of CountNet and MobileNetV1-SSD, all three passes.
  if (forced == Forced::kIm2col || !ImplicitGemmFits(g, pass)) return ConvAlgorithm::kIm2col;
  return ConvAlgorithm::kImplicitGemm;
}

cuda::ConvDims Dims32(const ConvGeometry& g) {
  auto i = [](int64_t v) { return static_cast<int>(v); };
  return {i(g.batch),    i(g.in_h),     i(g.in_w),     i(g.in_c),       i(g.k_h),
          i(g.k_w),      i(g.filter_c), i(g.out_c),    i(g.groups),     i(g.out_h),
          i(g.out_w),    i(g.pad_top),  i(g.pad_left), i(g.stride_h),   i(g.stride_w),
          i(g.dilation_h), i(g.dilation_w)};
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
  const cuda::ConvShape shape = cuda::ConvShapeOf(g);
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

// Runs one implicit GEMM with the partial-sum buffer its plan needs.
template <typename Problem, typename Launcher>
void RunImplicitGemm(OpKernelContext& ctx, const Problem& p, Launcher launch) {
  const cuda::ConvGemmPlan plan = cuda::PlanConvGemm(p.m, p.n, p.k, p.d.groups);
  const int64_t partial_floats = plan.partial_floats(p.m, p.n, p.d.groups);
  Tensor partial = partial_floats ? Scratch(ctx, partial_floats) : Tensor();
  launch(cuda::Stream(ctx), p, plan, partial_floats ? partial.data<float>() : nullptr);
  cuda::CheckLaunch(ctx, "ImplicitGemm");
}

cuda::ConvEpilogue EpilogueOf(ConvActivation activation) {
  switch (activation) {
    case ConvActivation::kNone: return cuda::ConvEpilogue::kBias;
    case ConvActivation::kRelu: return cuda::ConvEpilogue::kBiasRelu;
    case ConvActivation::kRelu6: return cuda::ConvEpilogue::kBiasRelu6;
  }
  return cuda::ConvEpilogue::kBias;
}

// y = conv(x, w), then (with a bias) + bias and the activation.
void ConvForward(OpKernelContext& ctx, const ConvGeometry& g, Forced forced, const float* x,
                 const float* w, float* y, const float* bias = nullptr,
                 ConvActivation activation = ConvActivation::kNone) {
  cudaStream_t stream = cuda::Stream(ctx);
  const int64_t patch = g.k_h * g.k_w * g.filter_c, og = g.group_out_c();
  switch (ChooseAlgorithm(g, ConvPass::kForward, forced)) {
    case ConvAlgorithm::kImplicitGemm:
      // The bias and the activation are applied as each sum is stored.
      return RunImplicitGemm(ctx,
                             cuda::ConvForwardGemm(Dims32(g), x, w, y, bias,
                                                   bias ? EpilogueOf(activation) : cuda::ConvEpilogue::kNone),
                             cuda::LaunchConvForwardGemm);
    case ConvAlgorithm::kDepthwise:
      cuda::LaunchDepthwiseConv(stream, cuda::ConvShapeOf(g), x, w, y);
      cuda::CheckLaunch(ctx, "DepthwiseConv");
      break;
    case ConvAlgorithm::kPointwise: {
      const int64_t rows = g.batch * g.in_h * g.in_w;
      RunGemm(ctx, {rows, og, g.filter_c, false, false, g.in_c, g.out_c, g.out_c, g.filter_c, og, og,
                    g.groups, 0.0f},
              x, w, y);
      break;
    }
    case ConvAlgorithm::kIm2col:
      ForEachChunk(ctx, g, x, [&](int64_t first, int64_t images, const float* cols) {
        const int64_t rows = images * g.out_h * g.out_w;
        RunGemm(ctx, {rows, og, patch, false, false, patch, g.out_c, g.out_c, rows * patch, og, og,
                      g.groups, 0.0f},
                cols, w, y + first * g.out_h * g.out_w * g.out_c);
      });
      break;
  }
  if (!bias) return;
  const int64_t count = g.batch * g.out_h * g.out_w * g.out_c;
  cuda::LaunchBiasAdd(stream, y, bias, y, count, g.out_c);
  if (activation != ConvActivation::kNone)
    cuda::LaunchUnary(stream, activation == ConvActivation::kRelu ? cuda::UnaryFn::kRelu : cuda::UnaryFn::kRelu6,
                      y, y, count);
  cuda::CheckLaunch(ctx, "FusedConv2D epilogue");
}

// dx = the adjoint of the convolution applied to dy.
void ConvBackpropInput(OpKernelContext& ctx, const ConvGeometry& g, Forced forced, const float* w,
                       const float* dy, float* dx) {
  cudaStream_t stream = cuda::Stream(ctx);
  const int64_t patch = g.k_h * g.k_w * g.filter_c, og = g.group_out_c();
  switch (ChooseAlgorithm(g, ConvPass::kInput, forced)) {
    case ConvAlgorithm::kImplicitGemm:
      // One GEMM per phase of the strides (conv_gemm.h); together they write every dx element.
      for (int64_t first_h = 0; first_h < std::min(g.stride_h, g.in_h); ++first_h)
        for (int64_t first_w = 0; first_w < std::min(g.stride_w, g.in_w); ++first_w)
          RunImplicitGemm(ctx,
                          cuda::ConvInputGemm(Dims32(g), static_cast<int>(first_h),
                                              static_cast<int>(first_w), w, dy, dx),
                          cuda::LaunchConvInputGemm);
      return;
    case ConvAlgorithm::kDepthwise:
      cuda::LaunchDepthwiseBackpropInput(stream, cuda::ConvShapeOf(g), w, dy, dx);
      return cuda::CheckLaunch(ctx, "DepthwiseBackpropInput");
    case ConvAlgorithm::kPointwise: {
      const int64_t rows = g.batch * g.in_h * g.in_w;
      return RunGemm(ctx, {rows, g.filter_c, og, false, true, g.out_c, g.out_c, g.in_c, og, og,
                           g.filter_c, g.groups, 0.0f},
                     dy, w, dx);
    }
    case ConvAlgorithm::kIm2col:
      ForEachChunk(ctx, g, nullptr, [&](int64_t first, int64_t images, float* cols) {
        const int64_t rows = images * g.out_h * g.out_w;
        RunGemm(ctx, {rows, patch, og, false, true, g.out_c, g.out_c, patch, og, og, rows * patch,
                      g.groups, 0.0f},
                dy + first * g.out_h * g.out_w * g.out_c, w, cols);
        cuda::LaunchCol2Im(stream, cuda::ConvShapeOf(g), cols, first, images, dx);
        cuda::CheckLaunch(ctx, "Col2Im");
      });
      return;
  }
}

// dw = the sum over every output pixel of its input patch times dy.
void ConvBackpropFilter(OpKernelContext& ctx, const ConvGeometry& g, Forced forced, const float* x,
                        const float* dy, float* dw) {
  const int64_t patch = g.k_h * g.k_w * g.filter_c, og = g.group_out_c();
  switch (ChooseAlgorithm(g, ConvPass::kFilter, forced)) {
    case ConvAlgorithm::kImplicitGemm:
      return RunImplicitGemm(ctx, cuda::ConvFilterGemm(Dims32(g), x, dy, dw),
                             cuda::LaunchConvFilterGemm);
    case ConvAlgorithm::kDepthwise:
      cuda::LaunchDepthwiseBackpropFilter(cuda::Stream(ctx), cuda::ConvShapeOf(g), x, dy, dw);
      return cuda::CheckLaunch(ctx, "DepthwiseBackpropFilter");
    case ConvAlgorithm::kPointwise: {
      const int64_t rows = g.batch * g.in_h * g.in_w;
      return RunGemm(ctx, {g.filter_c, og, rows, true, false, g.in_c, g.out_c, g.out_c, g.filter_c, og,
                           og, g.groups, 0.0f},
                     x, dy, dw);
    }
    case ConvAlgorithm::kIm2col:
      ForEachChunk(ctx, g, x, [&](int64_t first, int64_t images, const float* cols) {
        const int64_t rows = images * g.out_h * g.out_w;
        RunGemm(ctx, {patch, og, rows, true, false, patch, g.out_c, g.out_c, rows * patch, og, og,
                      g.groups, first == 0 ? 0.0f : 1.0f},
                cols, dy + first * g.out_h * g.out_w * g.out_c, dw);
      });
      return;
  }
}

class GpuConv2DKernel : public OpKernel {
 public:
  explicit GpuConv2DKernel(const Node& node)
      : OpKernel(node), params_(ConvParamsOf(node)), forced_(ForcedAlgorithm()) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    ConvGeometry g = cpu::KernelGeometry(node(), params_, x.shape(), w.shape());
    Tensor& y = ctx.allocate_output(0, g.output_shape());
    if (y.NumElements() == 0) return;
    if (x.NumElements() == 0 || w.NumElements() == 0) return Zero(ctx, y);
    ConvForward(ctx, g, forced_, x.data<float>(), w.data<float>(), y.data<float>());
  }

 private:
  ConvParams params_;
  Forced forced_;
};

// Conv2D, then the bias and the activation.
class GpuFusedConv2DKernel : public OpKernel {
 public:
  explicit GpuFusedConv2DKernel(const Node& node)
      : OpKernel(node), params_(ConvParamsOf(node)),
        activation_(ParseConvActivation(node.attr<std::string>("activation"))),
        forced_(ForcedAlgorithm()) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor& bias = ctx.input(2);
    ConvGeometry g = cpu::KernelGeometry(node(), params_, x.shape(), w.shape());
    DFLOW_REQUIRE(bias.rank() == 1 && bias.dim(0) == g.out_c, node().Describe(), ": bias ",
                  bias.shape().ToString(), " must be a vector of the ", g.out_c, " output channels");
    Tensor& y = ctx.allocate_output(0, g.output_shape());
    if (y.NumElements() == 0) return;
    if (x.NumElements() == 0 || w.NumElements() == 0) {
      // No sums: the output is the activation of the bias alone.
      Zero(ctx, y);
      float* out = y.data<float>();
      cuda::LaunchBiasAdd(cuda::Stream(ctx), out, bias.data<float>(), out, y.NumElements(), g.out_c);
      if (activation_ != ConvActivation::kNone)
        cuda::LaunchUnary(cuda::Stream(ctx),
                          activation_ == ConvActivation::kRelu ? cuda::UnaryFn::kRelu : cuda::UnaryFn::kRelu6,
                          out, out, y.NumElements());
      return cuda::CheckLaunch(ctx, "FusedConv2D epilogue");
    }
    ConvForward(ctx, g, forced_, x.data<float>(), w.data<float>(), y.data<float>(),
                bias.data<float>(), activation_);
  }

 private:
  ConvParams params_;
  ConvActivation activation_;
  Forced forced_;
};

class GpuConv2DBackpropInputKernel : public OpKernel {
 public:
  explicit GpuConv2DBackpropInputKernel(const Node& node)
      : OpKernel(node), params_(ConvParamsOf(node)), forced_(ForcedAlgorithm()) {}
  void Compute(OpKernelContext& ctx) const override {
    Shape input = cpu::SizesInput(node(), cuda::HostInput(ctx, 0), "input_sizes");
    const Tensor& w = ctx.input(1);
    const Tensor& dy = ctx.input(2);
    ConvGeometry g = cpu::KernelGeometry(node(), params_, input, w.shape());
    cpu::CheckKernelOutBackprop(node(), g, input, w.shape(), dy.shape());
    Tensor& dx = ctx.allocate_output(0, input);
    if (dx.NumElements() == 0) return;
    if (dy.NumElements() == 0 || w.NumElements() == 0) return Zero(ctx, dx);
    ConvBackpropInput(ctx, g, forced_, w.data<float>(), dy.data<float>(), dx.data<float>());
  }

 private:
  ConvParams params_;
  Forced forced_;
};

class GpuConv2DBackpropFilterKernel : public OpKernel {
 public:
  explicit GpuConv2DBackpropFilterKernel(const Node& node)
      : OpKernel(node), params_(ConvParamsOf(node)), forced_(ForcedAlgorithm()) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Shape filter = cpu::SizesInput(node(), cuda::HostInput(ctx, 1), "filter_sizes");
    const Tensor& dy = ctx.input(2);
    ConvGeometry g = cpu::KernelGeometry(node(), params_, x.shape(), filter);
    cpu::CheckKernelOutBackprop(node(), g, x.shape(), filter, dy.shape());
    Tensor& dw = ctx.allocate_output(0, filter);
    if (dw.NumElements() == 0) return;
    if (dy.NumElements() == 0 || x.NumElements() == 0) return Zero(ctx, dw);
    ConvBackpropFilter(ctx, g, forced_, x.data<float>(), dy.data<float>(), dw.data<float>());
  }

 private:
  ConvParams params_;
  Forced forced_;
};

[[maybe_unused]] const KernelRegistrar kConvKernels[] = {
    cuda::Float32Kernel<GpuConv2DKernel>("Conv2D"),
    cuda::Float32Kernel<GpuFusedConv2DKernel>("_FusedConv2D"),
    cuda::Float32Kernel<GpuConv2DBackpropInputKernel>("Conv2DBackpropInput"),
    cuda::Float32Kernel<GpuConv2DBackpropFilterKernel>("Conv2DBackpropFilter"),
};

}  // namespace
}  // namespace dflow

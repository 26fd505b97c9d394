// GPU OpKernels of the reductions (float32): Sum, Mean, Max, Min over axes,
// SumToShape (autodiff's un-broadcast), BiasAddGrad, and the softmax family.
// The CUDA kernels are in reduce.cu.
#include <limits>

#include "ops/cuda/kernel_util.h"
#include "ops/cuda/launch.h"
#include "ops/reduce.h"

namespace dflow {
namespace {

using cuda::ReduceFn;

// Splits `shape`'s dims by `mask` (true: reduced) into the launch's index.
cuda::ReduceIndex MakeReduceIndex(const OpKernelContext& ctx, const Shape& shape,
                                  const std::vector<bool>& mask) {
  std::vector<int64_t> strides = cuda::Strides(shape);
  cuda::ReduceIndex index;
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape.dim(d) == 1) continue;  // contributes nothing either way
    bool reduced = mask[d];
    int& rank = reduced ? index.reduced_rank : index.kept_rank;
    if (rank == cuda::kMaxRank)
      Fail(Code::kUnimplemented, ctx.node().Describe(), ": the GPU reduction handles up to ",
           cuda::kMaxRank, " non-unit dims per side, got ", shape.ToString());
    (reduced ? index.reduced_dims : index.kept_dims)[rank] = shape.dim(d);
    (reduced ? index.reduced_strides : index.kept_strides)[rank] = strides[d];
    ++rank;
    (reduced ? index.reduced_count : index.output_count) *= shape.dim(d);
  }
  return index;
}

// Reduces input 0 over `mask` into a fresh output of `out_shape`.
void Reduce(OpKernelContext& ctx, ReduceFn fn, bool mean, const std::vector<bool>& mask,
            const Shape& out_shape) {
  const Tensor& input = ctx.input(0);
  cuda::ReduceIndex index = MakeReduceIndex(ctx, input.shape(), mask);
  Tensor& out = ctx.allocate_output(0, out_shape);
  if (out.NumElements() == 0) return;
  // An empty reduction (a reduced dim of 0) leaves only the identity; the
  // kernel's loops then never read the input. Mean of nothing is NaN (0/0).
  bool empty = input.NumElements() == 0;
  float scale = mean ? (empty ? std::numeric_limits<float>::quiet_NaN()
                              : 1.0f / static_cast<float>(index.reduced_count))
                     : 1.0f;
  if (empty) index = cuda::ReduceIndex{.reduced_count = 0, .output_count = out.NumElements()};
  const int64_t splits = cuda::ReduceSplits(index);
  Tensor partial = splits > 1 ? Tensor(DType::kFloat32, Shape{splits * index.output_count},
                                       ctx.device().allocator())
                              : Tensor();
  cuda::LaunchReduce(cuda::Stream(ctx), fn, input.data<float>(), out.data<float>(), index, scale,
                     splits > 1 ? partial.data<float>() : nullptr);
  cuda::CheckLaunch(ctx, "Reduce");
}

template <ReduceFn kFn, bool kMean>
class GpuReduceKernel : public OpKernel {
 public:
  explicit GpuReduceKernel(const Node& node)
      : OpKernel(node), keep_dims_(node.attr<bool>("keep_dims")) {}
  void Compute(OpKernelContext& ctx) const override {
    const Shape& shape = ctx.input(0).shape();
    std::vector<bool> mask = ReductionMask(cuda::HostInt64s(ctx, 1, "axis"), shape);
    std::vector<int64_t> out_dims;
    for (int d = 0; d < shape.rank(); ++d)
      if (!mask[d]) out_dims.push_back(shape.dim(d));
      else if (keep_dims_) out_dims.push_back(1);
    Reduce(ctx, kFn, kMean, mask, Shape(out_dims));
  }

 private:
  bool keep_dims_;
};

// Sums the input down to `shape` (right-aligned; leading dims and dims where
// the target is 1 are summed).
class GpuSumToShapeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    Shape target(cuda::HostInt64s(ctx, 1, "shape"));
    if (input.shape() == target) return ctx.set_output(0, input);
    int lead = input.rank() - target.rank();
    DFLOW_REQUIRE(lead >= 0, node().Describe(), ": cannot sum ", input.shape().ToString(),
                  " down to ", target.ToString());
    std::vector<bool> mask(input.rank(), true);
    for (int d = lead; d < input.rank(); ++d) {
      int64_t t = target.dim(d - lead), in = input.dim(d);
      DFLOW_REQUIRE(t == in || t == 1, node().Describe(), ": cannot sum ",
                    input.shape().ToString(), " down to ", target.ToString());
      mask[d] = t == 1 && in != 1;
    }
    Reduce(ctx, ReduceFn::kSum, false, mask, target);
  }
};

// The bias gradient: the sum over every dim but the last.
class GpuBiasAddGradKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Shape& shape = ctx.input(0).shape();
    DFLOW_REQUIRE(shape.rank() >= 1, node().Describe(), ": out_backprop must have rank >= 1");
    std::vector<bool> mask(shape.rank(), true);
    mask.back() = false;
    Reduce(ctx, ReduceFn::kSum, false, mask, Shape{shape.dim(shape.rank() - 1)});
  }
};

// Rows are everything but the last dim.
template <bool kLog>
class GpuSoftmaxKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& logits = ctx.input(0);
    DFLOW_REQUIRE(logits.rank() >= 1, node().Describe(), ": logits must have rank >= 1");
    int64_t cols = logits.dim(logits.rank() - 1);
    int64_t rows = cols == 0 ? 0 : logits.NumElements() / cols;
    Tensor& out = ctx.allocate_output(0, logits.shape());
    auto launch = kLog ? cuda::LaunchLogSoftmax : cuda::LaunchSoftmax;
    launch(cuda::Stream(ctx), logits.data<float>(), out.data<float>(), rows, cols);
    cuda::CheckLaunch(ctx, kLog ? "LogSoftmax" : "Softmax");
  }
};

// A bad label is found on the device; reading the flag back waits for the
// stream, the price of naming the label like the CPU kernel does.
class GpuSparseCrossEntropyKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& logits = ctx.input(0);
    const Tensor& labels = ctx.input(1);
    DFLOW_REQUIRE(logits.rank() == 2 && labels.rank() == 1 && labels.dim(0) == logits.dim(0),
                  node().Describe(), ": features must be [batch, classes] and labels [batch], got ",
                  logits.shape().ToString(), " and ", labels.shape().ToString());
    int64_t rows = logits.dim(0), cols = logits.dim(1);
    Tensor& loss = ctx.allocate_output(0, Shape{rows});
    Tensor& backprop = ctx.allocate_output(1, logits.shape());
    CudaDevice& gpu = cuda::Gpu(ctx);
    Tensor bad = gpu.CopyToDevice(Tensor::Scalar<int64_t>(-1), node().Describe());
    cuda::LaunchSparseCrossEntropy(cuda::Stream(ctx), logits.data<float>(), labels.raw_data(),
                                   labels.dtype() == DType::kInt64, loss.data<float>(),
                                   backprop.data<float>(), rows, cols, bad.data<int64_t>());
    cuda::CheckLaunch(ctx, "SparseCrossEntropy");
    int64_t bad_label = gpu.CopyToHost(bad, node().Describe()).scalar<int64_t>();
    if (bad_label != -1)
      Fail(Code::kInvalidArgument, node().Describe(), ": label ", bad_label,
           " is outside the valid range [0, ", cols, ")");
  }
};

template <typename T> using GpuSum = GpuReduceKernel<ReduceFn::kSum, false>;
template <typename T> using GpuMean = GpuReduceKernel<ReduceFn::kSum, true>;
template <typename T> using GpuMax = GpuReduceKernel<ReduceFn::kMax, false>;
template <typename T> using GpuMin = GpuReduceKernel<ReduceFn::kMin, false>;
template <typename T> using GpuSumToShape = GpuSumToShapeKernel;
template <typename T> using GpuBiasAddGrad = GpuBiasAddGradKernel;
template <typename T> using GpuSoftmax = GpuSoftmaxKernel<false>;
template <typename T> using GpuLogSoftmax = GpuSoftmaxKernel<true>;
template <typename T> using GpuProd = GpuReduceKernel<ReduceFn::kProd, false>;
template <typename T> using GpuSparseCrossEntropy = GpuSparseCrossEntropyKernel;

REGISTER_KERNEL_FOR_TYPES("Sum", "GPU", GpuSum, float);
REGISTER_KERNEL_FOR_TYPES("Mean", "GPU", GpuMean, float);
REGISTER_KERNEL_FOR_TYPES("Max", "GPU", GpuMax, float);
REGISTER_KERNEL_FOR_TYPES("Min", "GPU", GpuMin, float);
REGISTER_KERNEL_FOR_TYPES("SumToShape", "GPU", GpuSumToShape, float);
REGISTER_KERNEL_FOR_TYPES("BiasAddGrad", "GPU", GpuBiasAddGrad, float);
REGISTER_KERNEL_FOR_TYPES("Softmax", "GPU", GpuSoftmax, float);
REGISTER_KERNEL_FOR_TYPES("LogSoftmax", "GPU", GpuLogSoftmax, float);
REGISTER_KERNEL_FOR_TYPES("Prod", "GPU", GpuProd, float);
REGISTER_KERNEL_FOR_TYPES("SparseSoftmaxCrossEntropyWithLogits", "GPU", GpuSparseCrossEntropy, float);

}  // namespace
}  // namespace dflow

// CPU kernels of BiasAdd and BiasAddGrad, over value seen as a [rows,
// channels] matrix (channels = the last dim):
//   BiasAdd:     out[r, c] = value[r, c] + bias[c]
//   BiasAddGrad: out[c] = sum_r g[r, c]   (double accumulation)
#include "ops/cpu/channel_sums.h"
#include "graph/kernel.h"

namespace dflow {
namespace {

// The channel count, after checking value's rank (and bias when given).
int64_t Channels(const Node& node, const Tensor& value, const Tensor* bias) {
  DFLOW_REQUIRE(value.rank() >= 2, node.Describe(), ": value must have rank >= 2, got shape ",
                value.shape().ToString());
  int64_t channels = value.dim(value.rank() - 1);
  if (bias) {
    DFLOW_REQUIRE(bias->rank() == 1 && bias->dim(0) == channels, node.Describe(), ": bias ",
                  bias->shape().ToString(), " must be a vector of the last dim of value ",
                  value.shape().ToString());
  }
  return channels;
}

template <typename T>
class BiasAddKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& value = ctx.input(0);
    const Tensor& bias = ctx.input(1);
    int64_t channels = Channels(node(), value, &bias);
    // Row by row, so value's buffer may be reused for the output.
    Tensor& output = ctx.forward_input_or_allocate_output(0, 0, value.shape());
    if (output.NumElements() == 0) return;
    int64_t rows = value.NumElements() / channels;
    const T* x = value.data<T>();
    const T* b = bias.data<T>();
    T* y = output.data<T>();
    ctx.pool().ParallelFor(rows, channels, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* xr = x + r * channels;
        T* yr = y + r * channels;
        for (int64_t c = 0; c < channels; ++c) yr[c] = xr[c] + b[c];
      }
    });
  }
};

template <typename T>
class BiasAddGradKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& grad = ctx.input(0);
    int64_t channels = Channels(node(), grad, nullptr);
    Tensor& output = ctx.allocate_output(0, Shape{channels});
    int64_t rows = channels == 0 ? 0 : grad.NumElements() / channels;
    const T* g = grad.data<T>();
    std::vector<double> sums = SumOverRows(ctx.pool(), rows, channels, channels,
                                           [&](int64_t r, double* acc) {
      const T* gr = g + r * channels;
      for (int64_t c = 0; c < channels; ++c) acc[c] += static_cast<double>(gr[c]);
    });
    T* out = output.data<T>();
    for (int64_t c = 0; c < channels; ++c) out[c] = static_cast<T>(sums[c]);
  }
};

REGISTER_KERNEL_FOR_TYPES("BiasAdd", "CPU", BiasAddKernel, float, double);
REGISTER_KERNEL_FOR_TYPES("BiasAddGrad", "CPU", BiasAddGradKernel, float, double);

}  // namespace
}  // namespace dflow

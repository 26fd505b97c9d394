// CPU kernel of FusedBatchNormGrad over [M = N*H*W rows, C channels]. One
// pass sums, per channel and in double,
//   sum_dy = sum(dy),  sum_dy_xc = sum(dy * (x - mean)),
// so with inv_std = 1 / sqrt(var + epsilon) and xhat = (x - mean) * inv_std:
//   scale_backprop = sum(dy * xhat) = sum_dy_xc * inv_std,  offset_backprop = sum_dy.
// A second pass writes dx = k * dy + u * (x - mean) + w per channel, with
//   training:  k = scale * inv_std, u = -k * inv_std^2 * sum_dy_xc / M, w = -k * sum_dy / M
//              (= scale * inv_std / M * (M dy - sum(dy) - xhat * sum(dy * xhat)))
//   inference: k = scale * inv_std, u = w = 0.
#include <cmath>

#include "graph/kernel.h"
#include "ops/cpu/batch_norm_util.h"
#include "ops/cpu/channel_sums.h"

namespace dflow {
namespace {

template <typename T>
class FusedBatchNormGradKernel : public OpKernel {
 public:
  explicit FusedBatchNormGradKernel(const Node& node)
      : OpKernel(node), epsilon_(node.attr<double>("epsilon")),
        training_(node.attr<bool>("is_training")) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    int64_t channels = batch_norm::CheckGradInputs(ctx);
    const T* mean = ctx.input(3).data<T>();
    const T* g = dy.data<T>();
    const T* in = x.data<T>();
    int64_t rows = channels == 0 ? 0 : x.NumElements() / channels;
    // acc[c] += dy, acc[C + c] += dy * (x - mean)
    std::vector<double> sums = SumOverRows(ctx.pool(), rows, 2 * channels, 3 * channels,
                                           [&](int64_t r, double* acc) {
      const T* gr = g + r * channels;
      const T* xr = in + r * channels;
      for (int64_t c = 0; c < channels; ++c) {
        double d = static_cast<double>(gr[c]);
        acc[c] += d;
        acc[channels + c] += d * (static_cast<double>(xr[c]) - static_cast<double>(mean[c]));
      }
    });
    std::vector<T> k(channels), u(channels), w(channels);
    Tensor& dscale = ctx.allocate_output(1, Shape{channels});
    Tensor& doffset = ctx.allocate_output(2, Shape{channels});
    for (int64_t c = 0; c < channels; ++c) {
      double var = static_cast<double>(ctx.input(4).data<T>()[c]);
      double inv_std = 1.0 / std::sqrt(var + epsilon_);
      double kc = static_cast<double>(ctx.input(2).data<T>()[c]) * inv_std;
      double m = static_cast<double>(rows);
      k[c] = static_cast<T>(kc);
      u[c] = training_ ? static_cast<T>(-kc * inv_std * inv_std * sums[channels + c] / m) : T(0);
      w[c] = training_ ? static_cast<T>(-kc * sums[c] / m) : T(0);
      dscale.data<T>()[c] = static_cast<T>(sums[channels + c] * inv_std);
      doffset.data<T>()[c] = static_cast<T>(sums[c]);
    }
    Tensor& dx = ctx.allocate_output(0, x.shape());
    T* out = dx.data<T>();
    ctx.pool().ParallelFor(rows, 4 * channels, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* gr = g + r * channels;
        const T* xr = in + r * channels;
        T* dr = out + r * channels;
        for (int64_t c = 0; c < channels; ++c) dr[c] = k[c] * gr[c] + u[c] * (xr[c] - mean[c]) + w[c];
      }
    });
  }

 private:
  double epsilon_;
  bool training_;
};

REGISTER_KERNEL_FOR_TYPES("FusedBatchNormGrad", "CPU", FusedBatchNormGradKernel, float, double);

}  // namespace
}  // namespace dflow

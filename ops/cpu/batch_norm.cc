// CPU kernel of FusedBatchNorm over x seen as [M = N*H*W rows, C channels].
// Training computes the statistics in one pass with shifted double sums
// (BatchMoments below):
//   mean = sum(x) / M,  var = sum((x - mean)^2) / M  (biased; normalises),
//   batch_variance = var * M / (M - 1)  (unbiased, as TensorFlow; var when M = 1).
// Then one pass y = x * a + b with a = scale / sqrt(var + epsilon) and
// b = offset - mean * a per channel.
#include <algorithm>
#include <cmath>
#include <limits>

#include "graph/kernel.h"
#include "ops/cpu/batch_norm_util.h"
#include "ops/cpu/channel_sums.h"

namespace dflow {
namespace {

template <typename T>
class FusedBatchNormKernel : public OpKernel {
 public:
  explicit FusedBatchNormKernel(const Node& node)
      : OpKernel(node), epsilon_(node.attr<double>("epsilon")),
        training_(node.attr<bool>("is_training")) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    int64_t channels = batch_norm::CheckForwardInputs(ctx, training_);
    int64_t rows = channels == 0 ? 0 : x.NumElements() / channels;
    std::vector<double> mean(channels), var(channels);
    if (training_) {
      BatchMoments(ctx, x.data<T>(), rows, channels, mean, var);
    } else {
      for (int64_t c = 0; c < channels; ++c) {
        mean[c] = static_cast<double>(ctx.input(3).data<T>()[c]);
        var[c] = static_cast<double>(ctx.input(4).data<T>()[c]);
      }
    }
    Normalize(ctx, x, rows, channels, mean, var);
    // Unbiased variance for the moving average: M / (M - 1) when M > 1.
    double unbias = training_ && rows > 1 ? static_cast<double>(rows) / (rows - 1) : 1.0;
    WriteVector(ctx, 1, mean, 1.0);
    WriteVector(ctx, 2, var, unbias);
    WriteVector(ctx, 3, mean, 1.0);
    WriteVector(ctx, 4, var, 1.0);
  }

 private:
  // mean and biased variance per channel in one pass over x, from double sums
  // of d = x - shift and d^2 with shift[c] = x[0, c]:
  //   mean = shift + E[d],  var = E[d^2] - E[d]^2.
  // Shifting by a sample of the channel keeps E[d] of the order of the
  // standard deviation, so the subtraction costs at most a few bits of the
  // double sums, even for data far from zero.
  static void BatchMoments(OpKernelContext& ctx, const T* x, int64_t rows, int64_t channels,
                           std::vector<double>& mean, std::vector<double>& var) {
    const double inv_m = rows > 0 ? 1.0 / static_cast<double>(rows)
                                  : std::numeric_limits<double>::quiet_NaN();
    std::vector<double> shift(channels, 0.0);
    if (rows > 0)
      for (int64_t c = 0; c < channels; ++c) shift[c] = static_cast<double>(x[c]);
    // acc[c] += d, acc[C + c] += d^2
    std::vector<double> sums = SumOverRows(ctx.pool(), rows, 2 * channels, 3 * channels,
                                           [&](int64_t r, double* acc) {
      const T* xr = x + r * channels;
      for (int64_t c = 0; c < channels; ++c) {
        double d = static_cast<double>(xr[c]) - shift[c];
        acc[c] += d;
        acc[channels + c] += d * d;
      }
    });
    for (int64_t c = 0; c < channels; ++c) {
      const double mean_d = sums[c] * inv_m;
      mean[c] = shift[c] + mean_d;
      var[c] = std::max(0.0, sums[channels + c] * inv_m - mean_d * mean_d);
    }
  }

  // y = x * a + b, rows in parallel.
  void Normalize(OpKernelContext& ctx, const Tensor& x, int64_t rows, int64_t channels,
                 const std::vector<double>& mean, const std::vector<double>& var) const {
    const T* scale = ctx.input(1).data<T>();
    const T* offset = ctx.input(2).data<T>();
    std::vector<T> a(channels), b(channels);
    for (int64_t c = 0; c < channels; ++c) {
      double ac = static_cast<double>(scale[c]) / std::sqrt(var[c] + epsilon_);
      a[c] = static_cast<T>(ac);
      b[c] = static_cast<T>(static_cast<double>(offset[c]) - mean[c] * ac);
    }
    Tensor& y = ctx.allocate_output(0, x.shape());
    const T* in = x.data<T>();
    T* out = y.data<T>();
    ctx.pool().ParallelFor(rows, 2 * channels, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* xr = in + r * channels;
        T* yr = out + r * channels;
        for (int64_t c = 0; c < channels; ++c) yr[c] = xr[c] * a[c] + b[c];
      }
    });
  }

  static void WriteVector(OpKernelContext& ctx, int output, const std::vector<double>& v,
                          double factor) {
    Tensor& t = ctx.allocate_output(output, Shape{static_cast<int64_t>(v.size())});
    for (size_t c = 0; c < v.size(); ++c) t.data<T>()[c] = static_cast<T>(v[c] * factor);
  }

  double epsilon_;
  bool training_;
};

REGISTER_KERNEL_FOR_TYPES("FusedBatchNorm", "CPU", FusedBatchNormKernel, float, double);

}  // namespace
}  // namespace dflow

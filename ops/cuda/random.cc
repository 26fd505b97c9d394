// GPU OpKernels of RandomUniform, RandomStandardNormal and TruncatedNormal
// (float32, float64). Like the CPU kernels, each run takes a fresh range of
// Philox blocks from the node's counter in the session's ResourceStore, so
// a session draws the same sequence on either device. Kernels: random.cu.
#include <random>

#include "ops/cpu/philox.h"
#include "ops/cuda/kernel_util.h"
#include "ops/cuda/random_launch.h"

namespace dflow {
namespace {

using cuda::RandomDistribution;

template <RandomDistribution kDist>
class GpuRandomKernel : public OpKernel {
 public:
  explicit GpuRandomKernel(const Node& node) : OpKernel(node) {
    int64_t seed = node.attr<int64_t>("seed"), seed2 = node.attr<int64_t>("seed2");
    if (seed == 0 && seed2 == 0) {  // unseeded: a fresh key per kernel
      std::random_device device;
      seed = (static_cast<int64_t>(device()) << 32) | device();
    }
    key_ = MixSeeds(seed, seed2);
  }

  void Compute(OpKernelContext& ctx) const override {
    std::vector<int64_t> dims = cuda::HostInt64s(ctx, 0, "shape");
    for (int64_t d : dims)
      DFLOW_REQUIRE(d >= 0, node().Describe(), ": shape has a negative dimension: ",
                    Shape(dims).ToString());
    Tensor& out = ctx.allocate_output(0, Shape(dims));
    int64_t n = out.NumElements();
    uint64_t tries = kDist == RandomDistribution::kTruncatedNormal ? cuda::kTruncatedNormalTries : 1;
    uint64_t base = ctx.resources().NextCounter(node().name(), static_cast<uint64_t>(n) * tries);
    cuda::LaunchRandom(cuda::Stream(ctx), kDist, out.dtype() == DType::kFloat64, key_, base, n,
                       out.raw_data());
    cuda::CheckLaunch(ctx, "Random");
  }

 private:
  uint64_t key_;
};

[[maybe_unused]] const KernelRegistrar kRandomKernels[] = {
    cuda::GpuKernel<GpuRandomKernel<RandomDistribution::kUniform>>("RandomUniform", DType::kFloat32),
    cuda::GpuKernel<GpuRandomKernel<RandomDistribution::kUniform>>("RandomUniform", DType::kFloat64),
    cuda::GpuKernel<GpuRandomKernel<RandomDistribution::kNormal>>("RandomStandardNormal",
                                                                  DType::kFloat32),
    cuda::GpuKernel<GpuRandomKernel<RandomDistribution::kNormal>>("RandomStandardNormal",
                                                                  DType::kFloat64),
    cuda::GpuKernel<GpuRandomKernel<RandomDistribution::kTruncatedNormal>>("TruncatedNormal",
                                                                           DType::kFloat32),
    cuda::GpuKernel<GpuRandomKernel<RandomDistribution::kTruncatedNormal>>("TruncatedNormal",
                                                                           DType::kFloat64),
};

}  // namespace
}  // namespace dflow

// CPU kernels for RandomUniform, RandomStandardNormal and TruncatedNormal.
// Each run takes a fresh range of Philox blocks from a per-node counter in
// the session's ResourceStore, so runs differ but a new session with the same
// seeds repeats the sequence.
#include <random>

#include "graph/kernel.h"
#include "ops/cpu/philox.h"

namespace dflow {
namespace {

enum class Distribution { kUniform, kNormal, kTruncatedNormal };

// Elements draw from blocks [base, base + n * kBlocksPerElement): one block
// per element keeps every element independent of the thread split; a
// truncated normal that needs another try takes the block n further on.
constexpr uint64_t kMaxTries = 64;

template <typename T, Distribution kDist>
class RandomKernel : public OpKernel {
 public:
  explicit RandomKernel(const Node& node) : OpKernel(node) {
    int64_t seed = node.attr<int64_t>("seed"), seed2 = node.attr<int64_t>("seed2");
    if (seed == 0 && seed2 == 0) {
      std::random_device device;
      seed = (static_cast<int64_t>(device()) << 32) | device();
    }
    key_ = MixSeeds(seed, seed2);
  }

  void Compute(OpKernelContext& ctx) const override {
    std::vector<int64_t> dims = ReadInt64s(ctx.input(0), "shape");
    for (int64_t d : dims)
      DFLOW_REQUIRE(d >= 0, "shape has a negative dimension: ", Shape(dims).ToString());
    Tensor& out = ctx.allocate_output(0, Shape(dims));
    int64_t n = out.NumElements();
    uint64_t tries = kDist == Distribution::kTruncatedNormal ? kMaxTries : 1;
    uint64_t base = ctx.resources().NextCounter(node().name(), static_cast<uint64_t>(n) * tries);
    Philox philox(key_, 0);
    T* data = out.data<T>();
    ctx.pool().ParallelFor(n, 40, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) data[i] = Draw(philox, base, n, i);
    });
  }

 private:
  static T Draw(const Philox& philox, uint64_t base, int64_t n, int64_t i) {
    for (uint64_t attempt = 0;; ++attempt) {
      Philox::Block b = philox(base + attempt * static_cast<uint64_t>(n) + static_cast<uint64_t>(i));
      if constexpr (kDist == Distribution::kUniform) {
        if constexpr (std::is_same_v<T, float>) return UniformFloat(b[0]);
        else return UniformDouble(b[0], b[1]);
      } else {
        double u1 = 1.0 - UniformDouble(b[0], b[1]);  // (0, 1]: log stays finite
        double z = BoxMuller(u1, UniformDouble(b[2], b[3]));
        if (kDist == Distribution::kNormal || std::abs(z) <= 2.0) return static_cast<T>(z);
        // 64 misses in a row has probability 0.0455^64: clamp rather than loop on.
        if (attempt + 1 == kMaxTries) return static_cast<T>(std::copysign(2.0, z));
      }
    }
  }

  uint64_t key_;
};

template <typename T> using RandomUniformKernel = RandomKernel<T, Distribution::kUniform>;
template <typename T> using RandomNormalKernel = RandomKernel<T, Distribution::kNormal>;
template <typename T> using TruncatedNormalKernel = RandomKernel<T, Distribution::kTruncatedNormal>;

REGISTER_KERNEL_FOR_TYPES("RandomUniform", "CPU", RandomUniformKernel, float, double);
REGISTER_KERNEL_FOR_TYPES("RandomStandardNormal", "CPU", RandomNormalKernel, float, double);
REGISTER_KERNEL_FOR_TYPES("TruncatedNormal", "CPU", TruncatedNormalKernel, float, double);

}  // namespace
}  // namespace dflow

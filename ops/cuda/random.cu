// CUDA kernels of RandomUniform, RandomStandardNormal and TruncatedNormal:
// one thread per element, the same draw as the CPU kernel (ops/cpu/random.cc)
// with the constexpr Philox of ops/cpu/philox.h.
#include "ops/cpu/philox.h"
#include "ops/cuda/grid.cuh"
#include "ops/cuda/random_launch.h"

namespace dflow::cuda {
namespace {

template <typename T, RandomDistribution kDist>
__device__ T Draw(const Philox& philox, uint64_t base, int64_t n, int64_t i) {
  for (uint64_t attempt = 0;; ++attempt) {
    Philox::Block b = philox(base + attempt * static_cast<uint64_t>(n) + static_cast<uint64_t>(i));
    if constexpr (kDist == RandomDistribution::kUniform) {
      if constexpr (sizeof(T) == 4) return UniformFloat(b[0]);
      else return UniformDouble(b[0], b[1]);
    } else {
      double u1 = 1.0 - UniformDouble(b[0], b[1]);  // (0, 1]: log stays finite
      double u2 = UniformDouble(b[2], b[3]);
      double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);  // Box-Muller, as BoxMuller()
      if (kDist == RandomDistribution::kNormal || fabs(z) <= 2.0) return static_cast<T>(z);
      if (attempt + 1 == kTruncatedNormalTries) return static_cast<T>(copysign(2.0, z));
    }
  }
}

template <typename T, RandomDistribution kDist>
__global__ void RandomKernel(Philox philox, uint64_t base, int64_t n, T* out) {
  DFLOW_GRID_STRIDE(i, n) out[i] = Draw<T, kDist>(philox, base, n, i);
}

template <typename T>
void Launch(cudaStream_t stream, RandomDistribution dist, const Philox& philox, uint64_t base,
            int64_t n, T* out) {
  switch (dist) {
    case RandomDistribution::kUniform:
      return RandomKernel<T, RandomDistribution::kUniform><<<Blocks(n), kThreads, 0, stream>>>(philox, base, n, out);
    case RandomDistribution::kNormal:
      return RandomKernel<T, RandomDistribution::kNormal><<<Blocks(n), kThreads, 0, stream>>>(philox, base, n, out);
    case RandomDistribution::kTruncatedNormal:
      return RandomKernel<T, RandomDistribution::kTruncatedNormal><<<Blocks(n), kThreads, 0, stream>>>(philox, base, n, out);
  }
}

}  // namespace

void LaunchRandom(cudaStream_t stream, RandomDistribution dist, bool is_double, uint64_t key,
                  uint64_t base, int64_t n, void* out) {
  if (n <= 0) return;
  Philox philox(key, 0);
  if (is_double)
    Launch(stream, dist, philox, base, n, static_cast<double*>(out));
  else
    Launch(stream, dist, philox, base, n, static_cast<float*>(out));
}

}  // namespace dflow::cuda

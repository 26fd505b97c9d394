// The tiled kernel of the implicit-GEMM convolutions (ops/cuda/conv_gemm.h):
// a block computes a BM x BN tile of one group's C = A * B, walking k in
// steps of 8 through two shared-memory buffers (the next step's elements are
// fetched into registers while the current step is multiplied); each thread
// owns a TM x TN sub-tile in registers. The tile shape follows n (output
// channels are often few: 8 to 32 in the counting network). When the tiles
// alone cannot fill the GPU (a filter gradient has a few hundred rows and a
// reduction over every output pixel), k is split: each split writes its own
// partial sums and a second kernel adds them in a fixed order, so results
// never depend on scheduling.
#include <algorithm>

#include "ops/cuda/conv_gemm.h"
#include "ops/cuda/conv_launch.h"
#include "ops/cuda/grid.cuh"

namespace dflow::cuda {
namespace {

constexpr int kStep = 8;  // k per shared-memory stage

template <int BM_, int BN_, int TM_, int TN_>
struct Tile {
  static constexpr int BM = BM_, BN = BN_, TM = TM_, TN = TN_;
  static constexpr int kThreads = (BM / TM) * (BN / TN);
  // Each thread fetches kAFetches consecutive k of one row (kThreads is a
  // multiple of BM), in runs of 4 where the problem allows.
  static constexpr int kAFetches = BM * kStep / kThreads;
  static_assert(kThreads % BM == 0 && TM % 4 == 0 && kAFetches % 4 == 0, "tile shape");
  static constexpr int kBFetches = (kStep * BN + kThreads - 1) / kThreads;
};

// TN consecutive floats of shared memory into registers, vectorised.
template <int TN>
__device__ __forceinline__ void LoadRow(const float* from, float* to) {
  if constexpr (TN % 4 == 0) {
#pragma unroll
    for (int q = 0; q < TN / 4; ++q) {
      float4 v = reinterpret_cast<const float4*>(from)[q];
      to[4 * q] = v.x, to[4 * q + 1] = v.y, to[4 * q + 2] = v.z, to[4 * q + 3] = v.w;
    }
  } else if constexpr (TN == 2) {
    float2 v = *reinterpret_cast<const float2*>(from);
    to[0] = v.x, to[1] = v.y;
  } else {
#pragma unroll
    for (int q = 0; q < TN; ++q) to[q] = from[q];
  }
}

// Grid: x = tiles of (m, n), y = splits of k, z = groups. With `partial`,
// writes sums to partial[((split * groups + group) * m + row) * n + col]
// instead of storing them. With runs_of_4, A is read four k at a time
// (Problem::A4: one index computation, one 16-byte load).
template <class T, class Problem>
__global__ void __launch_bounds__(T::kThreads) ImplicitGemmKernel(Problem p, int k_per_split,
                                                                    float* partial, bool runs_of_4) {
  __shared__ __align__(16) float as[2][kStep][T::BM];
  __shared__ __align__(16) float bs[2][kStep][T::BN];
  const int t = threadIdx.x, group = blockIdx.z;
  const int tiles_n = (p.n + T::BN - 1) / T::BN;
  const int m0 = (blockIdx.x / tiles_n) * T::BM, n0 = (blockIdx.x % tiles_n) * T::BN;
  const int k_begin = blockIdx.y * k_per_split, k_end = min(p.k, k_begin + k_per_split);

  const int a_row = t % T::BM, a_k = t / T::BM;
  const typename Problem::Row row = p.RowAt(m0 + a_row, group);
  float a_next[T::kAFetches], b_next[T::kBFetches];
  auto fetch = [&](int k0) {
    const int a_first = k0 + a_k * T::kAFetches;
    if (runs_of_4) {
      // k_end is a multiple of 4 here (p.k is, and so is every split's end).
#pragma unroll
      for (int q = 0; q < T::kAFetches; q += 4) {
        if (a_first + q < k_end) {
          p.A4(row, a_first + q, group, &a_next[q]);
        } else {
          a_next[q] = a_next[q + 1] = a_next[q + 2] = a_next[q + 3] = 0.0f;
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < T::kAFetches; ++j)
        a_next[j] = a_first + j < k_end ? p.A(row, a_first + j, group) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < T::kBFetches; ++j) {
      int e = t + j * T::kThreads, k = k0 + e / T::BN, col = n0 + e % T::BN;
      b_next[j] = e < kStep * T::BN && k < k_end && col < p.n ? p.B(k, col, group) : 0.0f;
    }
  };
  auto stash = [&](int buffer) {
#pragma unroll
    for (int j = 0; j < T::kAFetches; ++j) as[buffer][a_k * T::kAFetches + j][a_row] = a_next[j];
#pragma unroll
    for (int j = 0; j < T::kBFetches; ++j) {
      int e = t + j * T::kThreads;
      if (e < kStep * T::BN) bs[buffer][e / T::BN][e % T::BN] = b_next[j];
    }
  };

  const int tx = t % (T::BN / T::TN), ty = t / (T::BN / T::TN);
  float acc[T::TM][T::TN] = {};
  if (k_begin < k_end) {  // the same for the whole block
    fetch(k_begin);
    stash(0);
    __syncthreads();
    int buffer = 0;
    for (int k0 = k_begin; k0 < k_end; k0 += kStep) {
      const bool more = k0 + kStep < k_end;
      if (more) fetch(k0 + kStep);
#pragma unroll
      for (int kk = 0; kk < kStep; ++kk) {
        float a[T::TM], b[T::TN];
        LoadRow<T::TM>(&as[buffer][kk][ty * T::TM], a);
        LoadRow<T::TN>(&bs[buffer][kk][tx * T::TN], b);
#pragma unroll
        for (int i = 0; i < T::TM; ++i)
#pragma unroll
          for (int j = 0; j < T::TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }
      // The other buffer was last read before the previous step's barrier.
      if (more) stash(buffer ^ 1);
      __syncthreads();
      buffer ^= 1;
    }
  }
#pragma unroll
  for (int i = 0; i < T::TM; ++i) {
    int m = m0 + ty * T::TM + i;
    if (m >= p.m) break;
#pragma unroll
    for (int j = 0; j < T::TN; ++j) {
      int col = n0 + tx * T::TN + j;
      if (col >= p.n) break;
      if (partial)
        partial[((int64_t{blockIdx.y} * gridDim.z + group) * p.m + m) * p.n + col] = acc[i][j];
      else
        p.Store(m, col, group, acc[i][j]);
    }
  }
}

// Sums the splits' partials in split order and stores them.
template <class Problem>
__global__ void SumSplitsKernel(Problem p, int groups, int splits, const float* partial) {
  const int64_t count = int64_t{groups} * p.m * p.n;
  DFLOW_GRID_STRIDE(e, count) {
    float sum = 0;
    for (int s = 0; s < splits; ++s) sum += partial[s * count + e];
    int col = static_cast<int>(e % p.n), rest = static_cast<int>(e / p.n);
    p.Store(rest % p.m, col, rest / p.m, sum);
  }
}

// The tile shapes, by n: few output channels get tall, narrow tiles.
enum class TileKind { k256x8, k256x16, k256x32, k128x64, k128x128 };
TileKind TileFor(int n) {
  if (n <= 8) return TileKind::k256x8;
  if (n <= 16) return TileKind::k256x16;
  if (n <= 32) return TileKind::k256x32;
  if (n <= 64) return TileKind::k128x64;
  return TileKind::k128x128;
}
void TileSize(TileKind kind, int& bm, int& bn) {
  switch (kind) {
    case TileKind::k256x8: bm = 256, bn = 8; return;
    case TileKind::k256x16: bm = 256, bn = 16; return;
    case TileKind::k256x32: bm = 256, bn = 32; return;
    case TileKind::k128x64: bm = 128, bn = 64; return;
    case TileKind::k128x128: bm = 128, bn = 128; return;
  }
}

template <class T, class Problem>
void LaunchTiled(cudaStream_t stream, const Problem& p, int groups, const ConvGemmPlan& plan,
                 float* partial) {
  const int tiles = ((p.m + T::BM - 1) / T::BM) * ((p.n + T::BN - 1) / T::BN);
  dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(plan.splits),
            static_cast<unsigned>(groups));
  ImplicitGemmKernel<T, Problem><<<grid, T::kThreads, 0, stream>>>(
      p, plan.k_per_split, plan.splits > 1 ? partial : nullptr, p.runs_of_4());
  if (plan.splits > 1) {
    const int64_t count = int64_t{groups} * p.m * p.n;
    SumSplitsKernel<Problem><<<Blocks(count), kThreads, 0, stream>>>(p, groups, plan.splits, partial);
  }
}

template <class Problem>
void Launch(cudaStream_t stream, const Problem& p, int groups, const ConvGemmPlan& plan,
            float* partial) {
  if (p.m == 0 || p.n == 0) return;
  switch (TileFor(p.n)) {
    case TileKind::k256x8: return LaunchTiled<Tile<256, 8, 8, 1>>(stream, p, groups, plan, partial);
    case TileKind::k256x16: return LaunchTiled<Tile<256, 16, 8, 2>>(stream, p, groups, plan, partial);
    case TileKind::k256x32: return LaunchTiled<Tile<256, 32, 8, 4>>(stream, p, groups, plan, partial);
    case TileKind::k128x64: return LaunchTiled<Tile<128, 64, 8, 4>>(stream, p, groups, plan, partial);
    case TileKind::k128x128: return LaunchTiled<Tile<128, 128, 8, 8>>(stream, p, groups, plan, partial);
  }
}

}  // namespace

ConvGemmPlan PlanConvGemm(int64_t m, int64_t n, int64_t k, int64_t groups) {
  // Enough blocks for ~4 per multiprocessor on the largest GPUs (132 on an
  // H100), fixed rather than asked of the device so that the summation order,
  // and with it every bit of the result, is the same on every GPU.
  constexpr int64_t kTargetBlocks = 528;
  constexpr int64_t kMinStepsPerSplit = 16;
  int bm, bn;
  TileSize(TileFor(static_cast<int>(std::min<int64_t>(n, 1 << 30))), bm, bn);
  const int64_t blocks = ((m + bm - 1) / bm) * ((n + bn - 1) / bn) * std::max<int64_t>(groups, 1);
  const int64_t steps = (k + kStep - 1) / kStep;
  int64_t splits = std::clamp<int64_t>((kTargetBlocks + blocks - 1) / std::max<int64_t>(blocks, 1), 1,
                                       std::max<int64_t>(steps / kMinStepsPerSplit, 1));
  splits = std::min<int64_t>(splits, 65535);
  const int64_t per_split = ((steps + splits - 1) / splits) * kStep;
  splits = per_split > 0 ? (k + per_split - 1) / per_split : 1;
  return {static_cast<int>(std::max<int64_t>(splits, 1)), static_cast<int>(std::max<int64_t>(per_split, kStep))};
}

void LaunchConvForwardGemm(cudaStream_t stream, const ConvForwardGemm& p, const ConvGemmPlan& plan,
                           float* partial) {
  Launch(stream, p, p.d.groups, plan, partial);
}

void LaunchConvFilterGemm(cudaStream_t stream, const ConvFilterGemm& p, const ConvGemmPlan& plan,
                          float* partial) {
  Launch(stream, p, p.d.groups, plan, partial);
}

void LaunchConvInputGemm(cudaStream_t stream, const ConvInputGemm& p, const ConvGemmPlan& plan,
                         float* partial) {
  Launch(stream, p, p.d.groups, plan, partial);
}

}  // namespace dflow::cuda

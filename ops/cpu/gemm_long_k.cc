// GemmLongK (ops/cpu/gemm_long_k.h): c = a^T b as a sum of k outer products
// a[p, :]^T b[p, :], accumulated in register tiles.
//
// Why not Eigen: for a small output and a long k, Eigen's product repacks
// both operands for every slice of k, and with the output only a few tiles
// wide that copying costs about as much as the arithmetic (~10-25 GFLOP/s
// against ~60 for square products on one core). Here nothing is repacked:
// a row of a^T b's tile is one broadcast a[p, i] times a row of b, and both
// read straight from the inputs, found through per-row pointers so that the
// rows need not be one dense matrix (b is copied only when n is not a whole
// number of vectors, to pad its rows).
//
// Blocking: k is cut into chunks of kc rows, small enough that the chunk of
// b stays in L2 while every tile of output rows passes over it; a tile two
// vectors wide (12 x 32 floats with AVX-512: 24 vector accumulators, more
// registers than that spill; 6 x 16 with AVX2, 6 x 8 with SSE) is loaded,
// updated kc times and stored back per chunk. The kernel is compiled for
// each instruction set (gemm_long_k_kernel.inc via isa_variants.inc) and
// chosen at run time.
#include "ops/cpu/gemm_long_k.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/matmul.h"

namespace dflow::cpu {
namespace {

#define DFLOW_ISA_KERNEL "ops/cpu/gemm_long_k_kernel.inc"
#include "ops/cpu/isa_variants.inc"
#undef DFLOW_ISA_KERNEL

// SumRows of one instruction set, and the lanes it pads n to.
struct LongKKernel {
  void (*sum_rows)(const RowPairs& rows, int64_t m, int64_t n, int64_t npad, int64_t begin, int64_t end,
                   float* acc);
  int64_t lanes;
};

LongKKernel ActiveKernel() {
  switch (FloatIsa(ActiveCpuIsa())) {
    case CpuIsa::kAvx512: return {avx512::SumRows, avx512::kLanes};
    case CpuIsa::kAvx2: return {avx2::SumRows, avx2::kLanes};
    default: break;
  }
  return {generic::SumRows, generic::kLanes};
}

}  // namespace

bool LongKPays(int64_t m, int64_t k, int64_t n) {
  // Measured against Eigen on conv filter-gradient shapes (bench_conv_gemm):
  // it wins whenever the output is no longer than the inner dimension.
  return k >= 64 && m * n <= k * std::max(m, n);
}

void GemmLongK(ThreadPool* pool, const RowPairs& rows, float* c, int64_t m, int64_t k,
               int64_t n) {
  if (m == 0 || n == 0) return;
  const LongKKernel kernel = ActiveKernel();
  const int64_t npad = (n + kernel.lanes - 1) / kernel.lanes * kernel.lanes, work = m * n * k;
  constexpr int64_t kMinRowsPerBlock = 256;
  int64_t blocks = pool ? pool->num_threads() : 1;
  blocks = std::max<int64_t>(
      1, std::min({blocks, k / kMinRowsPerBlock, work / kMinGemmWorkPerThread}));
  std::vector<std::vector<float>> partial(blocks, std::vector<float>(m * npad));
  auto run = [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block)
      kernel.sum_rows(rows, m, n, npad, k * block / blocks, k * (block + 1) / blocks, partial[block].data());
  };
  if (blocks == 1) run(0, 1);
  else pool->ParallelFor(blocks, work / blocks, run);
  for (int64_t i = 0; i < m; ++i) {
    float* out = c + i * n;
    std::copy_n(partial[0].data() + i * npad, n, out);
    for (int64_t block = 1; block < blocks; ++block) {
      const float* in = partial[block].data() + i * npad;
      for (int64_t j = 0; j < n; ++j) out[j] += in[j];
    }
  }
}

void GemmLongK(ThreadPool* pool, const float* a, const float* b, float* c, int64_t m, int64_t k,
               int64_t n) {
  GemmLongK(pool, [&](int64_t first, int64_t count, const float** a_rows, const float** b_rows) {
    for (int64_t q = 0; q < count; ++q) {
      a_rows[q] = a + (first + q) * m;
      b_rows[q] = b + (first + q) * n;
    }
  }, c, m, k, n);
}

}  // namespace dflow::cpu

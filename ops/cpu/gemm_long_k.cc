// GemmLongK (ops/cpu/gemm_long_k.h): c = a^T b as a sum of k outer products
// a[p, :]^T b[p, :], accumulated in register tiles.
//
// Why not Eigen: for a small output and a long k, Eigen's product repacks
// both operands for every slice of k, and with the output only a few tiles
// wide that copying costs about as much as the arithmetic (~10-25 GFLOP/s
// against ~60 for square products on one core). Here nothing is repacked:
// a row of a^T b's tile is one broadcast a[p, i] times a row of b, and both
// read straight from the row-major inputs (b is copied only when n is not a
// whole number of vectors, to pad its rows).
//
// Blocking: k is cut into chunks of kc rows, small enough that the chunk of
// b stays in L2 while every tile of 12 output rows passes over it; a tile of
// 12 x 32 floats (24 vector accumulators with AVX-512, more registers than
// that spill) is loaded, updated kc times and stored back per chunk.
#include "ops/cpu/gemm_long_k.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/cpu/matmul.h"

namespace dflow::cpu {
namespace {

// 16 floats: one AVX-512 register (GCC and Clang split it on narrower
// hardware, so the code stays correct everywhere).
using Vec = float __attribute__((vector_size(64)));
constexpr int64_t kLanes = 16;
constexpr int kTileRows = 12;

Vec Load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void Store(float* p, const Vec& v) { std::memcpy(p, &v, sizeof v); }

// c[Rows, Vecs*16] (row stride ldc) += sum_{p < kc} a[p*lda + i] * b[p*ldb + j].
template <int Rows, int Vecs>
void Tile(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t kc, float* c,
          int64_t ldc) {
  Vec acc[Rows][Vecs];
  for (int i = 0; i < Rows; ++i)
    for (int v = 0; v < Vecs; ++v) acc[i][v] = Load(c + i * ldc + v * kLanes);
  for (int64_t p = 0; p < kc; ++p) {
    Vec row[Vecs];
    for (int v = 0; v < Vecs; ++v) row[v] = Load(b + p * ldb + v * kLanes);
    for (int i = 0; i < Rows; ++i) {
      const float s = a[p * lda + i];
      for (int v = 0; v < Vecs; ++v) acc[i][v] += s * row[v];
    }
  }
  for (int i = 0; i < Rows; ++i)
    for (int v = 0; v < Vecs; ++v) Store(c + i * ldc + v * kLanes, acc[i][v]);
}

// Tile<rows, Vecs> for a run-time rows in [1, kTileRows].
template <int Vecs, int Rows = kTileRows>
void TileOfRows(int rows, const float* a, int64_t lda, const float* b, int64_t ldb, int64_t kc,
                float* c, int64_t ldc) {
  if constexpr (Rows > 1) {
    if (rows < Rows) return TileOfRows<Vecs, Rows - 1>(rows, a, lda, b, ldb, kc, c, ldc);
  }
  Tile<Rows, Vecs>(a, lda, b, ldb, kc, c, ldc);
}

// acc[m, ldb] += a[kc, m]^T * b[kc, ldb] (a's row stride m; ldb a multiple of 16).
void Chunk(const float* a, int64_t m, const float* b, int64_t ldb, int64_t kc, float* acc) {
  for (int64_t i = 0; i < m; i += kTileRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kTileRows, m - i));
    for (int64_t j = 0; j < ldb; j += 2 * kLanes) {
      float* c = acc + i * ldb + j;
      if (j + 2 * kLanes <= ldb) TileOfRows<2>(rows, a + i, m, b + j, ldb, kc, c, ldb);
      else TileOfRows<1>(rows, a + i, m, b + j, ldb, kc, c, ldb);
    }
  }
}

// acc[m, npad] = a[begin:end, :]^T * b[begin:end, :], n padded to npad columns.
void SumRows(const float* a, const float* b, int64_t m, int64_t n, int64_t npad, int64_t begin,
             int64_t end, float* acc) {
  // ~256 KB of b per chunk: it stays in L2 while all the tiles pass over it.
  const int64_t kc = std::clamp<int64_t>((int64_t{1} << 16) / npad, 16, 512);
  std::vector<float> padded(n == npad ? 0 : kc * npad, 0.0f);
  std::fill(acc, acc + m * npad, 0.0f);
  for (int64_t p = begin; p < end; p += kc) {
    const int64_t len = std::min(kc, end - p);
    const float* rows = b + p * n;
    if (n != npad) {
      for (int64_t q = 0; q < len; ++q) std::copy_n(b + (p + q) * n, n, padded.data() + q * npad);
      rows = padded.data();
    }
    Chunk(a + p * m, m, rows, npad, len, acc);
  }
}

}  // namespace

bool LongKPays(int64_t m, int64_t k, int64_t n) {
  // Measured against Eigen on conv filter-gradient shapes (bench_conv_gemm):
  // it wins whenever the output is no longer than the inner dimension.
  return k >= 64 && m * n <= k * std::max(m, n);
}

void GemmLongK(ThreadPool* pool, const float* a, const float* b, float* c, int64_t m, int64_t k,
               int64_t n) {
  if (m == 0 || n == 0) return;
  const int64_t npad = (n + kLanes - 1) / kLanes * kLanes, work = m * n * k;
  constexpr int64_t kMinRowsPerBlock = 256;
  int64_t blocks = pool ? pool->num_threads() : 1;
  blocks = std::max<int64_t>(
      1, std::min({blocks, k / kMinRowsPerBlock, work / kMinGemmWorkPerThread}));
  std::vector<std::vector<float>> partial(blocks, std::vector<float>(m * npad));
  auto run = [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block)
      SumRows(a, b, m, n, npad, k * block / blocks, k * (block + 1) / blocks,
              partial[block].data());
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

}  // namespace dflow::cpu

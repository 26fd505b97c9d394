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

// c[Rows, Vecs*16] (row stride ldc) += sum_{p < kc} a[p][i] * b[p][j]: a[p]
// and b[p] point at row p's first entries of this tile.
template <int Rows, int Vecs>
void Tile(const float* const* a, int64_t i, const float* const* b, int64_t j, int64_t kc,
          float* c, int64_t ldc) {
  Vec acc[Rows][Vecs];
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < Vecs; ++v) acc[r][v] = Load(c + r * ldc + v * kLanes);
  for (int64_t p = 0; p < kc; ++p) {
    const float* a_row = a[p] + i;
    const float* b_row = b[p] + j;
    Vec row[Vecs];
    for (int v = 0; v < Vecs; ++v) row[v] = Load(b_row + v * kLanes);
    for (int r = 0; r < Rows; ++r) {
      const float s = a_row[r];
      for (int v = 0; v < Vecs; ++v) acc[r][v] += s * row[v];
    }
  }
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < Vecs; ++v) Store(c + r * ldc + v * kLanes, acc[r][v]);
}

// Tile<rows, Vecs> for a run-time rows in [1, kTileRows].
template <int Vecs, int Rows = kTileRows>
void TileOfRows(int rows, const float* const* a, int64_t i, const float* const* b, int64_t j,
                int64_t kc, float* c, int64_t ldc) {
  if constexpr (Rows > 1) {
    if (rows < Rows) return TileOfRows<Vecs, Rows - 1>(rows, a, i, b, j, kc, c, ldc);
  }
  Tile<Rows, Vecs>(a, i, b, j, kc, c, ldc);
}

// acc[m, npad] += sum_{p < kc} a[p][0:m]^T b[p][0:npad] (npad a multiple of 16).
void Chunk(const float* const* a, const float* const* b, int64_t kc, int64_t m, int64_t npad,
           float* acc) {
  for (int64_t i = 0; i < m; i += kTileRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kTileRows, m - i));
    for (int64_t j = 0; j < npad; j += 2 * kLanes) {
      float* c = acc + i * npad + j;
      if (j + 2 * kLanes <= npad) TileOfRows<2>(rows, a, i, b, j, kc, c, npad);
      else TileOfRows<1>(rows, a, i, b, j, kc, c, npad);
    }
  }
}

// acc[m, npad] = sum over p in [begin, end) of rows(p)'s a^T b, n padded to npad.
void SumRows(const RowPairs& rows, int64_t m, int64_t n, int64_t npad, int64_t begin,
             int64_t end, float* acc) {
  // ~256 KB of b per chunk: it stays in L2 while all the tiles pass over it.
  const int64_t kc = std::clamp<int64_t>((int64_t{1} << 16) / npad, 16, 512);
  std::vector<const float*> a_rows(kc), b_rows(kc);
  std::vector<float> padded(n == npad ? 0 : kc * npad, 0.0f);
  std::fill(acc, acc + m * npad, 0.0f);
  for (int64_t p = begin; p < end; p += kc) {
    const int64_t len = std::min(kc, end - p);
    rows(p, len, a_rows.data(), b_rows.data());
    if (n != npad)
      for (int64_t q = 0; q < len; ++q) {
        std::copy_n(b_rows[q], n, padded.data() + q * npad);
        b_rows[q] = padded.data() + q * npad;
      }
    Chunk(a_rows.data(), b_rows.data(), len, m, npad, acc);
  }
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
  const int64_t npad = (n + kLanes - 1) / kLanes * kLanes, work = m * n * k;
  constexpr int64_t kMinRowsPerBlock = 256;
  int64_t blocks = pool ? pool->num_threads() : 1;
  blocks = std::max<int64_t>(
      1, std::min({blocks, k / kMinRowsPerBlock, work / kMinGemmWorkPerThread}));
  std::vector<std::vector<float>> partial(blocks, std::vector<float>(m * npad));
  auto run = [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block)
      SumRows(rows, m, n, npad, k * block / blocks, k * (block + 1) / blocks,
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

// FixedRhsGemm (ops/cpu/gemm_packed.h): c = a * b for a long a and a fixed b.
//
// Why not Eigen: Eigen packs both operands for every call, and a conv calls
// the product once per chunk of rows (im2col) or per thread, so the filter is
// repacked again and again; on these shapes (m in the tens of thousands, k
// and n 24-1024) it runs at ~45-50 GFLOP/s on one core. Here b is packed once
// into panels of 32 columns ([k][32], zero-padded), and a is read in place:
// a row of a tile of c is one broadcast a[i, p] times a panel row.
//
// Blocking (see Multiply): slices of k, blocks of columns and chunks of rows
// sized for L1 / L2; within those, a tile of 12 rows x 32 columns of c (24
// vector accumulators with AVX-512, the most that fit in registers beside
// the panel row) is loaded (or zeroed, on the first slice of k), updated
// once per p of the slice, and stored.
#include "ops/cpu/gemm_packed.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "ops/cpu/matmul.h"

namespace dflow::cpu {
namespace {

// 16 floats: one AVX-512 register (GCC splits it on narrower hardware).
using Vec = float __attribute__((vector_size(64)));
constexpr int64_t kLanes = 16;
constexpr int64_t kPanel = 2 * kLanes;
constexpr int kTileRows = 12;
constexpr int64_t kL2BlockFloats = int64_t{1} << 16;  // 256 KB

Vec Load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void Store(float* p, const Vec& v) { std::memcpy(p, &v, sizeof v); }

// Width of the panel starting at column j0: 32, or 16 for a last panel of
// at most 16 columns (so n = 24 pays for 32 columns, not 64).
int64_t PanelWidth(int64_t j0, int64_t n) { return n - j0 <= kLanes ? kLanes : kPanel; }

// Where a tile's rows of a are: a[r * row + p * step] is row r, column p
// (in place: row = lda, step = 1; packed by PackRows: row = 1, step = 12).
struct RowsOfA {
  const float* a;
  int64_t row, step;
};

// c[Rows, Vecs*16] (row stride ldc) (+)= a[Rows, kc] * panel[kc, Vecs*16].
template <int Rows, int Vecs>
void Tile(RowsOfA a, const float* panel, int64_t kc, float* c, int64_t ldc, bool accumulate) {
  constexpr int64_t width = Vecs * kLanes;
  Vec acc[Rows][Vecs];
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < Vecs; ++v) acc[r][v] = accumulate ? Load(c + r * ldc + v * kLanes) : Vec{};
  for (int64_t p = 0; p < kc; ++p) {
    Vec row[Vecs];
    for (int v = 0; v < Vecs; ++v) row[v] = Load(panel + p * width + v * kLanes);
    for (int r = 0; r < Rows; ++r) {
      const float s = a.a[r * a.row + p * a.step];
      for (int v = 0; v < Vecs; ++v) acc[r][v] += s * row[v];
    }
  }
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < Vecs; ++v) Store(c + r * ldc + v * kLanes, acc[r][v]);
}

// Tile<rows, Vecs> for a run-time rows in [1, kTileRows].
template <int Vecs, int Rows = kTileRows>
void TileOfRows(int rows, RowsOfA a, const float* panel, int64_t kc, float* c, int64_t ldc,
                bool accumulate) {
  if constexpr (Rows > 1) {
    if (rows < Rows) return TileOfRows<Vecs, Rows - 1>(rows, a, panel, kc, c, ldc, accumulate);
  }
  Tile<Rows, Vecs>(a, panel, kc, c, ldc, accumulate);
}

void AnyTile(int rows, int64_t width, RowsOfA a, const float* panel, int64_t kc, float* c,
             int64_t ldc, bool accumulate) {
  if (width == kPanel) TileOfRows<2>(rows, a, panel, kc, c, ldc, accumulate);
  else TileOfRows<1>(rows, a, panel, kc, c, ldc, accumulate);
}

// The tile of c at columns [j0, j0 + cols) where the panel is wider than
// what is left of c: computed in a scratch tile, then copied out.
void EdgeTile(int rows, int64_t width, int64_t cols, RowsOfA a, const float* panel,
              int64_t kc, float* c, int64_t ldc, bool accumulate) {
  float scratch[kTileRows * kPanel] = {};
  if (accumulate)
    for (int r = 0; r < rows; ++r) std::copy_n(c + r * ldc, cols, scratch + r * width);
  AnyTile(rows, width, a, panel, kc, scratch, width, accumulate);
  for (int r = 0; r < rows; ++r) std::copy_n(scratch + r * width, cols, c + r * ldc);
}

// packed[p * kTileRows + r] = a[r * lda + p] for r < rows, p < kc: the rows
// of a tile interleaved, so the kernel's broadcasts read one stream. Read in
// place, rows whose stride is a multiple of 4 KB would all fall in the same
// L1 set and evict each other.
void PackRows(const float* a, int64_t lda, int rows, int64_t kc, float* packed) {
  for (int r = 0; r < rows; ++r)
    for (int64_t p = 0; p < kc; ++p) packed[p * kTileRows + r] = a[r * lda + p];
}

}  // namespace

template <typename T>
FixedRhsGemm<T>::FixedRhsGemm(const T* b, int64_t k, int64_t n, bool transpose)
    : b_(b), k_(k), n_(n), transpose_(transpose) {
  if constexpr (!std::is_same_v<T, float>) return;
  else {
    const int64_t padded = n == 0 ? 0 : (n + kLanes - 1) / kLanes * kLanes;
    panels_.assign(padded * k, 0.0f);
    for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
      const int64_t width = PanelWidth(j0, n), cols = std::min(width, n - j0);
      float* panel = panels_.data() + j0 * k;
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < cols; ++j)
          panel[p * width + j] = transpose ? b[(j0 + j) * k + p] : b[p * n + j0 + j];
    }
  }
}

template <typename T>
void FixedRhsGemm<T>::Multiply(const T* a, int64_t m, T* c) const {
  if constexpr (!std::is_same_v<T, float>) {
    Gemm<T>(nullptr, a, b_, c, m, k_, n_, false, transpose_);
  } else {
    if (m == 0 || n_ == 0) return;
    if (k_ == 0) return std::fill(c, c + m * n_, 0.0f);
    // k in slices of kc (a tile's packed rows, 12 x kc, stay in L1), n in
    // blocks of nc columns (b's kc x nc block stays in L2), rows in chunks of
    // mc (c's mc x nc block stays in L2 across the slices of k).
    const int64_t kc = std::min<int64_t>(k_, 256);
    const int64_t nc = std::max<int64_t>(kPanel, kL2BlockFloats / kc / kPanel * kPanel);
    const int64_t mc = std::max<int64_t>(kTileRows, kL2BlockFloats / nc / kTileRows * kTileRows);
    // Packing a tile's rows pays when they meet more than two panels.
    const bool pack_rows = n_ > 2 * kPanel;
    std::vector<float> packed(pack_rows ? kTileRows * kc : 0);
    for (int64_t i0 = 0; i0 < m; i0 += mc) {
      const int64_t i_end = std::min(m, i0 + mc);
      for (int64_t j_begin = 0; j_begin < n_; j_begin += nc) {
        const int64_t j_end = std::min(n_, j_begin + nc);
        for (int64_t p0 = 0; p0 < k_; p0 += kc) {
          const int64_t len = std::min(kc, k_ - p0);
          for (int64_t i = i0; i < i_end; i += kTileRows) {
            const int rows = static_cast<int>(std::min<int64_t>(kTileRows, i_end - i));
            RowsOfA tile_a{a + i * k_ + p0, k_, 1};
            if (pack_rows) {
              PackRows(tile_a.a, k_, rows, len, packed.data());
              tile_a = {packed.data(), 1, kTileRows};
            }
            for (int64_t j0 = j_begin; j0 < j_end; j0 += kPanel) {
              const int64_t width = PanelWidth(j0, n_), cols = std::min(width, n_ - j0);
              const float* panel = panels_.data() + j0 * k_ + p0 * width;
              float* tile = c + i * n_ + j0;
              if (cols == width) AnyTile(rows, width, tile_a, panel, len, tile, n_, p0 > 0);
              else EdgeTile(rows, width, cols, tile_a, panel, len, tile, n_, p0 > 0);
            }
          }
        }
      }
    }
  }
}

template <typename T>
void FixedRhsGemm<T>::Multiply(ThreadPool* pool, const T* a, int64_t m, T* c) const {
  const int64_t work = m * k_ * n_;
  int64_t blocks = pool ? pool->num_threads() : 1;
  blocks = std::max<int64_t>(1, std::min({blocks, m / kTileRows, work / kMinGemmWorkPerThread}));
  if (blocks == 1) return Multiply(a, m, c);
  pool->ParallelFor(blocks, work / blocks, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      const int64_t begin = m * block / blocks, end = m * (block + 1) / blocks;
      Multiply(a + begin * k_, end - begin, c + begin * n_);
    }
  });
}

template class FixedRhsGemm<float>;
template class FixedRhsGemm<double>;

}  // namespace dflow::cpu

// Int8Rhs (ops/cpu/int8_gemm.h): c = (a - a_zero) * b in int32.
//
// Layout: b is cut into groups of `group` rows (4 for VPDPBUSD, 2 for
// VPMADDWD); a group's entries for one column are adjacent, so one 32-bit
// lane of a vector holds them, and the columns are padded to whole panels of
// two vectors. A tile of a's rows is packed the same way, its group for one
// row as one int32, which the kernel broadcasts. Padding is zero on both
// sides, so it adds nothing. The kernel keeps a tile of c (rows x two
// vectors) in registers over the whole of k. With groups of four and rows
// of whole groups (k a multiple of 4, or rows padded to one: lda), a row's
// groups are already adjacent int32s, and the kernel reads them in place.
#include "ops/cpu/int8_gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "graph/status.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dflow::cpu {
namespace {

// The a tile of `rows` rows (row stride lda) from row i, packed as
// packed[g * tile_rows + r]: `group` codes of row r (little-endian, zero past
// k), widened to 16 bits each for groups of 2; rows past `rows` are zero.
void PackRows(const uint8_t* a, int64_t lda, int64_t k, int rows, int tile_rows, int64_t group, int32_t* packed) {
  const int64_t groups = (k + group - 1) / group, whole = k / group;
  for (int r = 0; r < rows; ++r) {
    const uint8_t* row = a + r * lda;
    for (int64_t g = 0; g < whole; ++g) {
      int32_t word;
      if (group == 4) std::memcpy(&word, row + 4 * g, 4);
      else word = static_cast<int32_t>(row[2 * g] | (uint32_t{row[2 * g + 1]} << 16));
      packed[g * tile_rows + r] = word;
    }
    if (whole < groups) {
      uint32_t word = 0;
      for (int64_t p = whole * group; p < k; ++p) word |= uint32_t{row[p]} << ((group == 4 ? 8 : 16) * (p % group));
      packed[whole * tile_rows + r] = static_cast<int32_t>(word);
    }
  }
  for (int r = rows; r < tile_rows; ++r)
    for (int64_t g = 0; g < groups; ++g) packed[g * tile_rows + r] = 0;
}

// Where a tile's int32 groups of a lie: group g of row r at
// base + g * group_stride + r * row_stride bytes (a packed tile, or the rows
// of a themselves).
struct TileRows {
  const char* base;
  int64_t group_stride, row_stride;
};

// c[rows, cols] from a tile computed `width` wide.
void StoreEdge(const int32_t* tile, int64_t width, int rows, int64_t cols, int32_t* c, int64_t ldc) {
  for (int r = 0; r < rows; ++r) std::memcpy(c + r * ldc, tile + r * width, cols * sizeof(int32_t));
}

void MultiplyGeneric(const int8_t* b, int64_t k, int64_t n, const uint8_t* a, int64_t lda, int64_t m,
                     const int32_t* init, int64_t first, int64_t cols, int32_t* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    int32_t* row = c + i * ldc;
    std::copy_n(init + first, cols, row);
    for (int64_t p = 0; p < k; ++p) {
      const int32_t x = a[i * lda + p];
      const int8_t* bp = b + p * n + first;
      for (int64_t j = 0; j < cols; ++j) row[j] += x * bp[j];
    }
  }
}

#if defined(__x86_64__)

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
using Vec = __m256i;
constexpr int64_t kLanes = 8;
constexpr int kTileRows = 6;
inline Vec Zero() { return _mm256_setzero_si256(); }
inline Vec Load(const char* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline void Store(int32_t* p, Vec v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
inline Vec Broadcast(int32_t x) { return _mm256_set1_epi32(x); }
// Two 16-bit products per lane, summed: exact (each below 2^15 in size).
inline Vec Step(Vec acc, Vec a, Vec b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
#include "ops/cpu/int8_gemm_kernel.inc"
}  // namespace avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,avxvnni")
namespace avx_vnni {
// AVX2's vectors and tiles; only the multiply-add step differs.
using avx2::Vec, avx2::kLanes, avx2::kTileRows, avx2::Zero, avx2::Load, avx2::Store, avx2::Broadcast;
// VPDPBUSD: four u8 x s8 products per lane, summed (no saturation).
inline Vec Step(Vec acc, Vec a, Vec b) { return _mm256_dpbusd_avx_epi32(acc, a, b); }
#include "ops/cpu/int8_gemm_kernel.inc"
}  // namespace avx_vnni
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx2,fma")
namespace avx512_vnni {
using Vec = __m512i;
constexpr int64_t kLanes = 16;
constexpr int kTileRows = 12;
inline Vec Zero() { return _mm512_setzero_si512(); }
inline Vec Load(const char* p) { return _mm512_loadu_si512(p); }
inline void Store(int32_t* p, Vec v) { _mm512_storeu_si512(p, v); }
inline Vec Broadcast(int32_t x) { return _mm512_set1_epi32(x); }
inline Vec Step(Vec acc, Vec a, Vec b) { return _mm512_dpbusd_epi32(acc, a, b); }
#include "ops/cpu/int8_gemm_kernel.inc"
}  // namespace avx512_vnni
#pragma GCC pop_options

#endif  // __x86_64__

}  // namespace

Int8Rhs::Int8Rhs(const int8_t* b, int64_t k, int64_t n) : k_(k), n_(n), isa_(ActiveCpuIsa()) {
  DFLOW_REQUIRE(k >= 0 && k < (int64_t{1} << 16) && n >= 0, "Int8Rhs: k must be in [0, 65536) and n >= 0, got k=", k,
                " n=", n);
  column_sums_.assign(n, 0);
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) column_sums_[j] += b[p * n + j];
#if !defined(__x86_64__)
  isa_ = CpuIsa::kGeneric;
#endif
  switch (isa_) {
    case CpuIsa::kAvx512Vnni: group_ = 4, lanes_ = 16; break;
    case CpuIsa::kAvxVnni: group_ = 4, lanes_ = 8; break;
    case CpuIsa::kAvx2: group_ = 2, lanes_ = 8; break;
    case CpuIsa::kAvx512: group_ = 2, lanes_ = 8; break;  // VPMADDWD on ymm: AVX-512 has no u8 x s8 dot product
    case CpuIsa::kGeneric: group_ = 1, lanes_ = 1; break;
  }
  if (group_ == 1) {
    packed8_.assign(b, b + k * n);
    return;
  }
  const int64_t groups = (k + group_ - 1) / group_, npad = (n + 2 * lanes_ - 1) / (2 * lanes_) * (2 * lanes_);
  if (group_ == 4) packed8_.assign(groups * npad * 4, 0);
  else packed16_.assign(groups * npad * 2, 0);
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = ((p / group_) * npad + j) * group_ + p % group_;
      if (group_ == 4) packed8_[at] = b[p * n + j];
      else packed16_[at] = b[p * n + j];
    }
}

void Int8Rhs::MultiplyColumns(const uint8_t* a, int64_t lda, int64_t m, int32_t a_zero, int64_t first, int64_t cols,
                              int32_t* c, int64_t ldc) const {
  if (m == 0 || cols == 0) return;
  DFLOW_REQUIRE(lda >= k_ && first % panel_width() == 0 && first >= 0 && cols >= 0 && first + cols <= n_,
                "Int8Rhs: columns [", first, ", ", first + cols, ") with row stride ", lda, " do not fit k=", k_, " n=", n_,
                " in panels of ", panel_width());
  const int64_t npad = (n_ + 2 * lanes_ - 1) / (2 * lanes_) * (2 * lanes_);
  // The zero point's share, -a_zero * (column sums of b), is where the sums start.
  std::vector<int32_t> init(npad, 0);
  for (int64_t j = 0; j < n_; ++j) init[j] = -a_zero * column_sums_[j];
  const auto* b8 = reinterpret_cast<const char*>(packed8_.data());
  switch (isa_) {
#if defined(__x86_64__)
    case CpuIsa::kAvx512Vnni:
      avx512_vnni::MultiplyPacked(b8, 4, npad, a, lda, m, k_, init.data(), first, cols, c, ldc);
      break;
    case CpuIsa::kAvxVnni: avx_vnni::MultiplyPacked(b8, 4, npad, a, lda, m, k_, init.data(), first, cols, c, ldc); break;
    case CpuIsa::kAvx2:
    case CpuIsa::kAvx512:
      avx2::MultiplyPacked(reinterpret_cast<const char*>(packed16_.data()), 2, npad, a, lda, m, k_, init.data(), first,
                           cols, c, ldc);
      break;
#endif
    default: MultiplyGeneric(packed8_.data(), k_, n_, a, lda, m, init.data(), first, cols, c, ldc);
  }
}

void Int8Rhs::Multiply(const uint8_t* a, int64_t m, int32_t a_zero, int32_t* c) const {
  MultiplyColumns(a, k_, m, a_zero, 0, n_, c, n_);
}

void Int8Rhs::Multiply(ThreadPool* pool, const uint8_t* a, int64_t m, int32_t a_zero, int32_t* c, int64_t lda) const {
  if (lda == 0) lda = k_;
  const int64_t work = m * k_ * n_;
  int64_t blocks = pool ? pool->num_threads() : 1;
  blocks = std::max<int64_t>(1, std::min({blocks, m / 12, work / (int64_t{1} << 18)}));
  if (blocks == 1) return MultiplyColumns(a, lda, m, a_zero, 0, n_, c, n_);
  pool->ParallelFor(blocks, work / blocks, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      const int64_t begin = m * block / blocks, end = m * (block + 1) / blocks;
      MultiplyColumns(a + begin * lda, lda, end - begin, a_zero, 0, n_, c + begin * n_, n_);
    }
  });
}

std::shared_ptr<const Int8RhsCache::Packed> Int8RhsCache::Get(const std::vector<int64_t>& key, const int8_t* bytes,
                                                              int64_t size, const Pack& pack) {
  std::lock_guard<std::mutex> lock(mu_);
  const CpuIsa isa = ActiveCpuIsa();
  if (packed_ && isa == isa_ && key == key_ && static_cast<int64_t>(bytes_.size()) == size &&
      std::equal(bytes_.begin(), bytes_.end(), bytes))
    return packed_;
  packed_ = std::make_shared<const Packed>(pack(bytes));
  key_ = key;
  bytes_.assign(bytes, bytes + size);
  isa_ = isa;
  return packed_;
}

}  // namespace dflow::cpu

// DepthwiseRowsVnni; see int8_depthwise.h.
#include "ops/cpu/int8_depthwise.h"

#include "ops/cpu/cpu_isa.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dflow::cpu {
namespace {

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx512vnni,avx2")

// Channels [ch, ch + 32) of four tap rows, interleaved: lane j of the first
// vector holds the four taps of channel ch + j, of the second ch + 16 + j.
inline void Interleave32(const uint8_t* const* rows, int64_t ch, __m512i& low, __m512i& high) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[0] + ch));
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[1] + ch));
  const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[2] + ch));
  const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[3] + ch));
  // Per 128-bit half (channels 0-15, 16-31): bytes a b, then words ab cd.
  const __m256i ab_lo = _mm256_unpacklo_epi8(a, b), ab_hi = _mm256_unpackhi_epi8(a, b);
  const __m256i cd_lo = _mm256_unpacklo_epi8(c, d), cd_hi = _mm256_unpackhi_epi8(c, d);
  const __m256i q0 = _mm256_unpacklo_epi16(ab_lo, cd_lo);  // channels 0-3 | 16-19
  const __m256i q1 = _mm256_unpackhi_epi16(ab_lo, cd_lo);  // 4-7 | 20-23
  const __m256i q2 = _mm256_unpacklo_epi16(ab_hi, cd_hi);  // 8-11 | 24-27
  const __m256i q3 = _mm256_unpackhi_epi16(ab_hi, cd_hi);  // 12-15 | 28-31
  const __m512i x = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);  // 0-3, 16-19, 4-7, 20-23
  const __m512i y = _mm512_inserti64x4(_mm512_castsi256_si512(q2), q3, 1);  // 8-11, 24-27, 12-15, 28-31
  low = _mm512_shuffle_i32x4(x, y, _MM_SHUFFLE(2, 0, 2, 0));   // 0-3, 4-7, 8-11, 12-15
  high = _mm512_shuffle_i32x4(x, y, _MM_SHUFFLE(3, 1, 3, 1));  // 16-19, 20-23, 24-27, 28-31
}

// Channels [ch, ch + 16) of four tap rows, interleaved.
inline __m512i Interleave16(const uint8_t* const* rows, int64_t ch) {
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[0] + ch));
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[1] + ch));
  const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[2] + ch));
  const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[3] + ch));
  const __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
  const __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
  __m512i x = _mm512_castsi128_si512(_mm_unpacklo_epi16(ab_lo, cd_lo));
  x = _mm512_inserti32x4(x, _mm_unpackhi_epi16(ab_lo, cd_lo), 1);
  x = _mm512_inserti32x4(x, _mm_unpacklo_epi16(ab_hi, cd_hi), 2);
  return _mm512_inserti32x4(x, _mm_unpackhi_epi16(ab_hi, cd_hi), 3);
}

inline __m512i Load(const void* p) { return _mm512_loadu_si512(p); }

// acc[ow][c] for channels [0, end) (a multiple of 16): per output column,
// k_h * groups products of expanded rows (taps interleaved, one segment per
// group) with the packed filter rows.
void RowVnni(const uint8_t* const* expanded, int64_t k_h, int64_t groups, int64_t segment, int64_t out_w,
             int64_t channels, int64_t end, const int8_t* packed, const int32_t* correction, int32_t* acc) {
  for (int64_t ow = 0; ow < out_w; ++ow) {
    const int64_t at = ow * channels * 4;
    int32_t* out = acc + ow * channels;
    int64_t ch = 0;
    for (; ch + 32 <= end; ch += 32) {
      __m512i low = _mm512_sub_epi32(_mm512_setzero_si512(), Load(correction + ch));
      __m512i high = _mm512_sub_epi32(_mm512_setzero_si512(), Load(correction + ch + 16));
      for (int64_t kh = 0; kh < k_h; ++kh)
        for (int64_t g = 0; g < groups; ++g) {
          const uint8_t* x = expanded[kh] + g * segment + at + ch * 4;
          const int8_t* w = packed + ((kh * groups + g) * channels + ch) * 4;
          low = _mm512_dpbusd_epi32(low, Load(x), Load(w));
          high = _mm512_dpbusd_epi32(high, Load(x + 64), Load(w + 64));
        }
      _mm512_storeu_si512(out + ch, low);
      _mm512_storeu_si512(out + ch + 16, high);
    }
    for (; ch + 16 <= end; ch += 16) {
      __m512i sum = _mm512_sub_epi32(_mm512_setzero_si512(), Load(correction + ch));
      for (int64_t kh = 0; kh < k_h; ++kh)
        for (int64_t g = 0; g < groups; ++g)
          sum = _mm512_dpbusd_epi32(sum, Load(expanded[kh] + g * segment + at + ch * 4),
                                    Load(packed + ((kh * groups + g) * channels + ch) * 4));
      _mm512_storeu_si512(out + ch, sum);
    }
  }
}

// One output column's four tap rows, interleaved into `out` for channels
// [0, end) (a multiple of 16).
void InterleaveTaps(const uint8_t* const* taps, int64_t end, uint8_t* out) {
  int64_t ch = 0;
  for (; ch + 32 <= end; ch += 32) {
    __m512i low, high;
    Interleave32(taps, ch, low, high);
    _mm512_storeu_si512(out + ch * 4, low);
    _mm512_storeu_si512(out + ch * 4 + 64, high);
  }
  for (; ch + 16 <= end; ch += 16) _mm512_storeu_si512(out + ch * 4, Interleave16(taps, ch));
}

#pragma GCC pop_options
#endif  // __x86_64__

}  // namespace

bool DepthwiseRowsVnni::Available() { return ActiveCpuIsa() == CpuIsa::kAvx512Vnni; }

DepthwiseRowsVnni::DepthwiseRowsVnni(const int8_t* w, const ConvGeometry& g, uint8_t zero)
    : g_(g), groups_((g.k_w + 3) / 4), packed_(g.k_h * groups_ * g.in_c * 4, 0), correction_(g.in_c, 0),
      zero_row_(g.in_c, zero) {
  const int64_t c = g.in_c;
  for (int64_t kh = 0; kh < g.k_h; ++kh)
    for (int64_t kw = 0; kw < g.k_w; ++kw)
      for (int64_t ch = 0; ch < c; ++ch) {
        const int8_t weight = w[(kh * g.k_w + kw) * c + ch];
        packed_[((kh * groups_ + kw / 4) * c + ch) * 4 + kw % 4] = weight;
        correction_[ch] += int32_t{zero} * weight;
      }
}

void DepthwiseRowsVnni::ExpandRow(const uint8_t* in, uint8_t* expanded) const {
  const int64_t c = g_.in_c;
  const uint8_t* taps[4];
  for (int64_t group = 0; group < groups_; ++group)
    for (int64_t ow = 0; ow < g_.out_w; ++ow) {
      for (int64_t t = 0; t < 4; ++t) {
        const int64_t kw = group * 4 + t, iw = ow * g_.stride_w - g_.pad_left + kw * g_.dilation_w;
        taps[t] = in && kw < g_.k_w && iw >= 0 && iw < g_.in_w ? in + iw * c : zero_row_.data();
      }
      uint8_t* out = expanded + group * segment() + ow * c * 4;
#if defined(__x86_64__)
      const int64_t vector_end = c / 16 * 16;
      InterleaveTaps(taps, vector_end, out);
#else
      const int64_t vector_end = 0;
#endif
      for (int64_t ch = vector_end; ch < c; ++ch)
        for (int64_t t = 0; t < 4; ++t) out[ch * 4 + t] = taps[t][ch];
    }
}

void DepthwiseRowsVnni::Row(const uint8_t* const* expanded, int32_t* acc) const {
  const int64_t c = g_.in_c;
#if defined(__x86_64__)
  const int64_t vector_end = c / 16 * 16;
  RowVnni(expanded, g_.k_h, groups_, segment(), g_.out_w, c, vector_end, packed_.data(), correction_.data(), acc);
#else
  const int64_t vector_end = 0;
#endif
  for (int64_t ow = 0; ow < g_.out_w; ++ow)
    for (int64_t ch = vector_end; ch < c; ++ch) {
      int32_t sum = -correction_[ch];
      for (int64_t kh = 0; kh < g_.k_h; ++kh)
        for (int64_t group = 0; group < groups_; ++group)
          for (int64_t t = 0; t < 4; ++t)
            sum += int32_t{expanded[kh][group * segment() + (ow * c + ch) * 4 + t]} *
                   packed_[((kh * groups_ + group) * c + ch) * 4 + t];
      acc[ow * c + ch] = sum;
    }
}

}  // namespace dflow::cpu

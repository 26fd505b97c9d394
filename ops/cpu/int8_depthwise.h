// The int8 depthwise convolution's sums with AVX512-VNNI (multiplier 1, as
// MobileNet's): for one output pixel, acc[c] = sum over the taps t of
// (x_t[c] - zero) * w_t[c]. VPDPBUSD sums four u8 x s8 products per 32-bit
// lane, so four taps of a channel are interleaved into one lane (two rounds
// of byte and word unpacks of the taps' rows) against weights packed the
// same way once; taps past the last, and taps in the padding, read a row of
// zero points, and the zero point's share zero * sum_t w_t[c] is taken off
// at the end, which makes the padding add nothing, as the op defines.
#pragma once

#include <cstdint>
#include <vector>

namespace dflow::cpu {

class DepthwiseVnni {
 public:
  // Whether the active instruction set (cpu_isa.h) is AVX512-VNNI.
  static bool Available();

  // w: [taps][channels] int8 (the depthwise filter [KH, KW, C, 1]).
  DepthwiseVnni(const int8_t* w, int64_t taps, int64_t channels, uint8_t zero);

  // The taps a pixel reads, padded to whole groups of four.
  int64_t padded_taps() const { return groups_ * 4; }
  // `channels` zero points: what a tap outside the input reads.
  const uint8_t* zero_row() const { return zero_row_.data(); }
  // src: padded_taps() rows of `channels` codes; acc: `channels` sums.
  void Pixel(const uint8_t* const* src, int32_t* acc) const;

 private:
  int64_t taps_, groups_, channels_;
  uint8_t zero_;
  std::vector<int8_t> w_;        // [taps][channels], for the channels past the last block of 16
  std::vector<int8_t> packed_;   // [group][channel][4 taps]
  std::vector<int32_t> correction_;  // zero * sum over the taps of w[t][c]
  std::vector<uint8_t> zero_row_;
};

}  // namespace dflow::cpu

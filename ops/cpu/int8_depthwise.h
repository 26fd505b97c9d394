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

#include "ops/conv.h"

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

// The same sums a row of output pixels at a time, for filters at most four
// taps wide (MobileNet's 3x3): the k_w taps of one filter row are
// interleaved into the lanes once per input row (ExpandRow: for every output
// column, its taps in that row, the fourth lane a zero point against a zero
// weight), so each output pixel is then k_h VPDPBUSDs per 16 channels with
// no shuffles (Row). An input row serves k_h / stride_h output rows, which
// is what the per-pixel interleaving paid again for each.
class DepthwiseRowsVnni {
 public:
  // Whether Available() and the filter is at most 4 taps wide.
  static bool Fits(const ConvGeometry& g);

  // w: [k_h * k_w][channels] int8 (the depthwise filter [KH, KW, C, 1]).
  DepthwiseRowsVnni(const int8_t* w, const ConvGeometry& g, uint8_t zero);

  // Bytes of one expanded input row: [out_w][channels][4].
  int64_t expanded_size() const { return g_.out_w * g_.in_c * 4; }
  // The expanded row of `in` (in_w x channels codes), or of a row of the
  // padding when `in` is null.
  void ExpandRow(const uint8_t* in, uint8_t* expanded) const;
  // acc [out_w][channels]: the sums of one output row from the k_h expanded
  // input rows it reads, in filter-row order.
  void Row(const uint8_t* const* expanded, int32_t* acc) const;

 private:
  ConvGeometry g_;
  uint8_t zero_;
  std::vector<int8_t> packed_;        // [k_h][channel][4 taps of the filter row]
  std::vector<int32_t> correction_;   // zero * sum over the taps of w[t][c]
  std::vector<uint8_t> zero_row_;
};

}  // namespace dflow::cpu

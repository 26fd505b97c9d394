// The int8 depthwise convolution's sums with AVX512-VNNI (multiplier 1, as
// MobileNet's), a row of output pixels at a time: acc[c] = sum over the taps
// t of (x_t[c] - zero) * w_t[c]. VPDPBUSD sums four u8 x s8 products per
// 32-bit lane, so the taps of one filter row are cut into groups of four and
// each group is interleaved into the lanes once per input row (ExpandRow:
// for every output column, its taps in that row, two rounds of byte and word
// unpacks), against weights packed the same way once. An output pixel is
// then k_h * groups VPDPBUSDs per 16 channels with no shuffles (Row); an
// input row serves k_h / stride_h output rows. Taps past a row's last, and
// taps in the padding, read zero points (against zero weights past the
// last), and the zero point's share zero * sum_t w_t[c] is taken off, which
// makes the padding add nothing, as the op defines.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/conv.h"

namespace dflow::cpu {

class DepthwiseRowsVnni {
 public:
  // Whether the active instruction set (cpu_isa.h) is AVX512-VNNI.
  static bool Available();

  // w: [k_h * k_w][channels] int8 (the depthwise filter [KH, KW, C, 1]).
  DepthwiseRowsVnni(const int8_t* w, const ConvGeometry& g, uint8_t zero);

  // Bytes of one expanded input row: [groups][out_w][channels][4].
  int64_t expanded_size() const { return groups_ * segment(); }
  // The expanded row of `in` (in_w x channels codes), or of a row of the
  // padding when `in` is null.
  void ExpandRow(const uint8_t* in, uint8_t* expanded) const;
  // acc [out_w][channels]: the sums of one output row from the k_h expanded
  // input rows it reads, in filter-row order.
  void Row(const uint8_t* const* expanded, int32_t* acc) const;

 private:
  int64_t segment() const { return g_.out_w * g_.in_c * 4; }  // one group of taps

  ConvGeometry g_;
  int64_t groups_;                    // groups of four taps per filter row
  std::vector<int8_t> packed_;        // [k_h][group][channel][4 taps]
  std::vector<int32_t> correction_;   // zero * sum over the taps of w[t][c]
  std::vector<uint8_t> zero_row_;
};

}  // namespace dflow::cpu

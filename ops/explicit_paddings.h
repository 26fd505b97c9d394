// The explicit_paddings attr that Conv2D and the pooling ops read when their
// padding is "EXPLICIT": 8 ints, a (before, after) pair per NHWC dim, of
// which only height and width may be non-zero. One check serves them all.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace dflow {

// The (top, bottom, left, right) pads of a checked explicit_paddings attr;
// all 0 when padding is not EXPLICIT, where the attr must be empty. Throws
// kInvalidArgument naming the attr and the bad value: a padding other than
// EXPLICIT with a non-empty list, not 8 entries, a non-zero batch or channel
// pad, a negative pad.
std::array<int64_t, 4> ParseExplicitPaddings(bool is_explicit,
                                             const std::vector<int64_t>& explicit_paddings);

}  // namespace dflow

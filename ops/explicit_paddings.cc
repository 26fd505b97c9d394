// The explicit_paddings check shared by Conv2D (ops/conv_geometry.cc) and the
// pooling ops (ops/pool.cc).
#include "ops/explicit_paddings.h"

#include "graph/status.h"
#include "ops/array_shapes.h"

namespace dflow {

std::array<int64_t, 4> ParseExplicitPaddings(bool is_explicit,
                                             const std::vector<int64_t>& explicit_paddings) {
  using array::IntsString;
  const auto& e = explicit_paddings;
  if (!is_explicit) {
    if (!e.empty())
      Fail(Code::kInvalidArgument, "explicit_paddings is only allowed with padding EXPLICIT, "
           "got ", IntsString(e));
    return {0, 0, 0, 0};
  }
  if (e.size() != 8)
    Fail(Code::kInvalidArgument, "explicit_paddings must have 8 entries (before, after per "
         "NHWC dim), got ", e.size(), ": ", IntsString(e));
  if (e[0] || e[1] || e[6] || e[7])
    Fail(Code::kInvalidArgument, "explicit_paddings must be 0 in the batch and channel dims, "
         "got ", IntsString(e));
  for (int i = 2; i < 6; ++i)
    if (e[i] < 0)
      Fail(Code::kInvalidArgument, "explicit_paddings must be >= 0, got ", e[i], " in ",
           IntsString(e));
  return {e[2], e[3], e[4], e[5]};
}

}  // namespace dflow

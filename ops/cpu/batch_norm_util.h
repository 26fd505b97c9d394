// Shape checks shared by the batch norm CPU kernels (batch_norm.cc,
// batch_norm_grad.cc): x is NHWC, the per-channel inputs are [C].
#pragma once

#include "graph/kernel.h"

namespace dflow::batch_norm {

// The channel count of an NHWC tensor; any other rank is an error naming the node.
inline int64_t Channels(const Node& node, const Tensor& x, const char* what) {
  DFLOW_REQUIRE(x.rank() == 4, node.Describe(), ": ", what, " must be NHWC (rank 4), got ",
                x.shape().ToString());
  return x.dim(3);
}

// Input `input` must be a vector of `channels` elements.
inline void RequireChannelVector(const Node& node, const Tensor& v, int input, int64_t channels) {
  DFLOW_REQUIRE(v.rank() == 1 && v.dim(0) == channels, node.Describe(), ": ",
                node.def().inputs.at(input).name, " must have one element per channel (",
                channels, "), got shape ",
                v.shape().ToString());
}

}  // namespace dflow::batch_norm

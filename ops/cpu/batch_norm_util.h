// Shape checks shared by the batch norm kernels (ops/cpu/batch_norm*.cc and
// ops/cuda/batch_norm.cc): x is NHWC, the per-channel inputs are [C].
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

// FusedBatchNorm's inputs: x NHWC, then scale, offset, mean and variance of
// one element per channel (in training mean and variance are not read and
// may be empty). Returns the channel count.
inline int64_t CheckForwardInputs(const OpKernelContext& ctx, bool training) {
  int64_t channels = Channels(ctx.node(), ctx.input(0), "x");
  for (int i = 1; i < 5; ++i) {
    bool unused = training && i >= 3;
    if (!(unused && ctx.input(i).NumElements() == 0))
      RequireChannelVector(ctx.node(), ctx.input(i), i, channels);
  }
  return channels;
}

// FusedBatchNormGrad's: y_backprop and x of one NHWC shape, then scale and
// the two reserve spaces of one element per channel. Returns the channel count.
inline int64_t CheckGradInputs(const OpKernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  int64_t channels = Channels(ctx.node(), x, "x");
  DFLOW_REQUIRE(dy.shape() == x.shape(), ctx.node().Describe(), ": y_backprop ",
                dy.shape().ToString(), " and x ", x.shape().ToString(), " must have the same shape");
  for (int i = 2; i < 5; ++i) RequireChannelVector(ctx.node(), ctx.input(i), i, channels);
  return channels;
}

}  // namespace dflow::batch_norm

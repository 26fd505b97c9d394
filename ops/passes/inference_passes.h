// Graph rewrites for running conv networks in inference, registered with
// RunPasses (graph/passes.h) and switched by PassOptions::fold_batch_norm and
// PassOptions::fuse_conv_bias_activation. Batch-norm folding needs constant
// weights: freeze the variables first (FreezeGraph, graph/freeze.h).
//
// Both leave a chain alone when a value they would remove is used by
// anything else: a second consumer, a fetch (its _Retval), a target or a
// control edge. The node that replaces a chain takes the name of the chain's
// last node, so traces and targets still find it.
#pragma once

#include <set>
#include <string>

#include "graph/device.h"
#include "graph/graph.h"

namespace dflow {

// Conv2D (constant filter) [-> BiasAdd (constant bias)] ->
// FusedBatchNorm (is_training false; constant scale, offset, mean, variance)
// becomes Conv2D (filter') -> BiasAdd (bias'), where per output channel o
//   s[o]          = scale[o] / sqrt(variance[o] + epsilon)
//   filter'[.., o] = filter[.., o] * s[o]     (HWIO: o is the last dim for
//                                             plain, grouped and depthwise filters)
//   bias'[o]      = (bias[o] - mean[o]) * s[o] + offset[o]   (bias 0 when absent)
// since BN(y) = (y - mean) * s + offset is affine in y per channel. Only
// FusedBatchNorm's output y may be used. Returns the number folded.
int FoldBatchNormIntoConv(Graph& graph, const std::set<std::string>& targets);

// Conv2D -> BiasAdd [-> Relu | Relu6] becomes one _FusedConv2D (ops/conv.h)
// when `device` has a _FusedConv2D kernel. Returns the number fused.
int FuseConvBiasActivation(Graph& graph, const Device& device,
                           const std::set<std::string>& targets);

}  // namespace dflow

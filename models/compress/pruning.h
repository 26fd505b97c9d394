// Pruning, as the model compression box of Murabito 2022 ("Deep Learning at
// the Edge", section 3.2) offers it through PyTorch: L1 unstructured per
// layer and over the whole model, and structured by channels. Here the
// channels are not only zeroed but removed: the network is rebuilt with
// fewer channels in the pruned layers and in the layers that read them, so
// that it is smaller and faster. These functions work on the variables'
// values by name; a network says which of its variables hold a layer's
// channels (its ChannelGroups, e.g. MobileNetSsdChannelGroups).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "graph/tensor.h"

namespace dflow::models {

using TensorsByName = std::map<std::string, Tensor>;

enum class PruneScope {
  kPerLayer,  // each tensor loses `sparsity` of its own weights
  kGlobal,    // the smallest weights of all the tensors together
};

// Unstructured L1 pruning (PyTorch's l1_unstructured and, kGlobal,
// global_unstructured with L1): for each float32 tensor a mask of its shape,
// 0 where a weight is pruned and 1 elsewhere, pruning the round(sparsity *
// n) weights of smallest |w| (ties go in order of position, so the count is
// exact). kInvalidArgument for a sparsity outside [0, 1] or a tensor that
// is not float32.
TensorsByName L1UnstructuredMasks(const TensorsByName& weights, double sparsity, PruneScope scope);

// Weights times their masks (the pruned weights set to 0).
Tensor ApplyMask(const Tensor& weights, const Tensor& mask);

// One axis of one variable that is indexed by a layer's output channels:
// channel c is index offset + c along `axis`. The offset places a layer
// whose output is concatenated with others' (SqueezeNet's expand 3x3 after
// its expand 1x1) in the input axis of the layers reading the concatenation.
struct ChannelSlice {
  std::string variable;
  int axis = 0;
  int64_t offset = 0;
};

// The output channels of one layer and every variable they index: the
// layer's own filter, bias and batch norm, and the consumers' input axes
// (the next depthwise convolution's channels, the next convolution's input
// channels). Removing channel c removes index c along every slice.
struct ChannelGroup {
  std::string layer;     // the key of the network's channel counts
  int64_t channels = 0;  // before pruning
  // What ranks the channels: |gamma| of the layer's batch norm (Network
  // Slimming, Liu et al. 2017) when it has one, else the L1 norm of each
  // output channel's filter (Li et al. 2017, Pruning Filters for Efficient
  // ConvNets): the values along `axis`, summed in absolute value over the
  // other axes.
  ChannelSlice importance;
  std::vector<ChannelSlice> slices;  // the layer's own variables and its consumers'
};

// A layer's output channels: its entry in `channels` (a channel-pruned
// network's counts, by layer name), else `otherwise`.
int64_t LayerChannels(const std::map<std::string, int64_t>& channels, const std::string& layer, int64_t otherwise);

// Splits a network's counts for a part built under its own scope: returns
// those of layers named "<prefix><layer>" as "<layer>" and puts the others
// in `rest` (the network's own layers).
std::map<std::string, int64_t> ChannelsUnder(const std::map<std::string, int64_t>& channels, const std::string& prefix,
                                             std::map<std::string, int64_t>& rest);

// Refuses counts for layers that are not among `layers` (the network's
// prunable ones) or below 1: kInvalidArgument "<network>: no layer ...".
void CheckLayerChannels(const std::map<std::string, int64_t>& channels, const std::vector<std::string>& layers,
                        const std::string& network);

// The slices of a layer's own variables, named "<layer>/<variable>" as
// models/layers.h's ConvBn and Conv2D name them: its filter's output axis
// (the last) and the batch norm's gamma, beta and moving statistics, or the
// bias.
std::vector<ChannelSlice> OwnChannelSlices(const std::string& layer, bool batch_norm);

// Puts `prefix` before every variable the groups name (a network built
// under a scope of its own).
void PrefixVariables(std::vector<ChannelGroup>& groups, const std::string& prefix);

// The channels each group keeps: the round((1 - sparsity) * C) (at least
// one) of highest importance, in ascending order; equal importance keeps the
// lower index. kInvalidArgument names a missing importance variable or one
// whose axis does not have the group's channel count.
std::map<std::string, std::vector<int64_t>> ChooseChannels(const std::vector<ChannelGroup>& groups,
                                                           const TensorsByName& variables, double sparsity);

// `t` with only the indices `kept` along `axis`.
Tensor KeepChannels(const Tensor& t, int axis, std::span<const int64_t> kept);

// The pruned network's variables: each of `variables` with the channels not
// in `kept` removed along every slice that names it; the slices of one axis
// (several groups' parts of a concatenation) are cut together, their
// offsets taken in the unpruned axis. kInvalidArgument names a variable a
// group names but `variables` lacks, an axis of the wrong size, or slices
// of one axis that overlap.
TensorsByName PruneChannels(const std::vector<ChannelGroup>& groups,
                            const std::map<std::string, std::vector<int64_t>>& kept, TensorsByName variables);

}  // namespace dflow::models

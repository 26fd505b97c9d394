// MobileNetV1-SSD300 of the on-line detector training thesis (Listing A.2; reference/torch_models.py
// MobileNetSSD): a conv_bn stem and 13 depthwise-separable blocks to 1024
// channels, four extra blocks (1x1 then 3x3 stride 2), and 3x3 box and class
// heads on six feature maps ([512, 1024, 512, 256, 256, 256] channels, 6
// boxes per cell). NHWC float32 input, 300x300 in the benchmarks; any size
// whose last map is still at least 1x1 works (the maps are the input's
// size divided by 16, 32, 64, 128, 256 and 512, rounded up). The width
// multiplier (MobileNets, Howard et al. 2017, section 3.3) thins every
// layer but the heads: channels c become max(8, round(alpha c)). Channel
// pruning (models/compress/pruning.h) sets the channels of single layers.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "models/compress/pruning.h"
#include "models/model_parts.h"

namespace dflow::models {

struct MobileNetSsd {
  Output boxes;    // [N, cells * 6 * 4]: every head's output, flattened and joined
  Output classes;  // [N, cells * 6 * num_classes]
  std::vector<Output> variables;      // weights, biases, batch-norm gammas and betas
  std::vector<Output> backbone_variables;  // the MobileNet part of `variables` (stem, 13 blocks)
  std::vector<Output> batch_norm_updates;  // moving averages (training only)
  std::vector<Output> features;       // the six feature maps the heads read
};

struct MobileNetSsdOptions {
  int64_t num_classes = 9;
  bool training = true;  // batch-norm mode
  double width_multiplier = 1.0;  // alpha > 0; 0.25, 0.5, 0.75 and 1 as the paper
  // Output channels of single layers, overriding the width multiplier's
  // (a channel-pruned network): "stem", "block1/pointwise" ..
  // "block13/pointwise", "extra1/reduce", "extra1/expand" .. "extra4/expand".
  // A depthwise layer has its input's channels.
  std::map<std::string, int64_t> channels{};
  ModelPartDevices devices{};     // stem and blocks, extras, heads (and the joined outputs)
};

MobileNetSsd BuildMobileNetSsd(const Scope& scope, const Output& images,
                               MobileNetSsdOptions options = {});

// The layers whose output channels can be pruned, each with the variables
// its channels index (names relative to the scope BuildMobileNetSsd was
// given): its filter and batch norm (or bias), the next depthwise layer,
// and the input axis of every layer reading it (the next pointwise or
// extra layer, the heads). The heads' outputs are not pruned: they are the
// boxes and classes.
std::vector<ChannelGroup> MobileNetSsdChannelGroups(const MobileNetSsdOptions& options);

}  // namespace dflow::models

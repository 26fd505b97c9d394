// SqueezeNet-SSD (qfgaohao/pytorch-ssd's squeezenet_ssd_lite): SqueezeNet
// 1.1 (squeezenet.h), box and class heads on fire8 and on five extra blocks after fire9 (1x1 then a separable
// 3x3 of stride 2; [512, 512, 512, 256, 256, 256] channels), 6 boxes per
// cell. The heads are separable 3x3 convolutions (depthwise, ReLU,
// pointwise), a 1x1 convolution on the last map. At 300x300 the maps are
// 18, 10, 5, 3, 2 and 1 cells a side (SqueezeNetSsdMapSizes).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "models/model_parts.h"
#include "models/squeezenet.h"

namespace dflow::models {

struct SqueezeNetSsd {
  Output boxes;                   // [N, cells * 6 * 4]: every head's output, flattened and joined
  Output classes;                 // [N, cells * 6 * num_classes]
  std::vector<Output> variables;  // every trained weight
  std::vector<Output> backbone_variables;  // the SqueezeNet part of `variables`
  std::vector<Output> batch_norm_updates;  // the backbone's moving averages (training)
  std::vector<Output> features;            // the six feature maps the heads read
};

struct SqueezeNetSsdOptions {
  int64_t num_classes = 9;
  SqueezeNetOptions backbone{};
  // Output channels of single layers (a channel-pruned network): the
  // backbone's as "squeezenet/<layer>" (SqueezeNetOptions::channels), the
  // extras' "extra1/reduce", "extra1/expand" .. "extra5/expand". A
  // depthwise layer has its input's channels.
  std::map<std::string, int64_t> channels{};
  ModelPartDevices devices{};  // SqueezeNet, extras, heads (and the joined outputs)
};

SqueezeNetSsd BuildSqueezeNetSsd(const Scope& scope, const Output& images,
                                 SqueezeNetSsdOptions options = {});

// The layers whose output channels can be pruned, each with the variables
// its channels index (names relative to the scope BuildSqueezeNetSsd was
// given): the backbone's (SqueezeNetChannelGroups), and each extra's 1x1
// reduce and separable expand with the depthwise and pointwise layers
// reading them (the next extra, the heads). The heads' outputs are the boxes
// and classes: not pruned.
std::vector<ChannelGroup> SqueezeNetSsdChannelGroups(const SqueezeNetSsdOptions& options);

// The six maps' sides for an S x S input, without building the network.
std::vector<int64_t> SqueezeNetSsdMapSizes(int64_t image_size);

}  // namespace dflow::models

// ResNet-18 and ResNet-50 (He et al. 2016) as a backbone: torchvision's
// layout (v1.5: a Bottleneck strides on its 3x3 convolution), NHWC, without
// the classifier, returning the feature maps C3, C4, C5 that an FPN reads.
//
//   stem:   7x7/2 conv (64, no bias) + BN + ReLU, 3x3/2 max pool (padding 1)
//   layer1..layer4: [2, 2, 2, 2] BasicBlocks (18) or [3, 4, 6, 3] Bottlenecks
//           (50) of width 64, 128, 256, 512; layers 2-4 stride 2 in their
//           first block; a 1x1 conv + BN shortcut where the shape changes.
//
// Every convolution pads k / 2 as PyTorch's, so a map has ceil(S / stride)
// cells for any input size S: C3, C4, C5 are ceil(S / 8), ceil(S / 16),
// ceil(S / 32) with 128, 256, 512 channels (18) or 512, 1024, 2048 (50).
//
// Variable names, under `<scope>/resnet/`, and torchvision's (for loading
// its weights; filters are HWIO here, OIHW there):
//   stem/filter                         conv1.weight
//   stem/{gamma, beta}                  bn1.{weight, bias}
//   stem/{moving_mean, moving_variance} bn1.{running_mean, running_var}
//   layer<i>/block<j>/conv<k>/filter    layer<i>.<j>.conv<k>.weight
//   layer<i>/block<j>/conv<k>/gamma ... layer<i>.<j>.bn<k>.weight ...
//   layer<i>/block<j>/downsample/filter layer<i>.<j>.downsample.0.weight
//   layer<i>/block<j>/downsample/gamma  layer<i>.<j>.downsample.1.weight ...
// (i = 1..4, j from 0, k = 1..2 or 1..3.)
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "models/compress/pruning.h"

namespace dflow::models {

struct ResNetOptions {
  int depth = 50;        // 18 or 50
  bool training = true;  // batch-norm mode: batch statistics and moving-average updates
  // Output channels of the convolutions inside a block (a channel-pruned
  // network), overriding the layer's width: "layer<i>/block<j>/conv1" (and
  // ".../conv2" in a Bottleneck). A block's output joins the residual sum
  // and keeps its channels.
  std::map<std::string, int64_t> channels{};
};

struct ResNet {
  std::vector<Output> features;            // C3, C4, C5 (strides 8, 16, 32)
  std::vector<Output> variables;           // filters, batch-norm gammas and betas
  std::vector<Output> batch_norm_updates;  // moving averages (training only)
};

// The backbone over NHWC float32 images (normalised by the caller, e.g. with
// ImageNet's mean and standard deviation as torchvision's weights expect).
ResNet BuildResNet(const Scope& scope, const Output& images, ResNetOptions options = {});

// The layers whose output channels can be pruned: the convolutions inside
// the blocks, each with its filter and batch norm and the input axis of the
// next convolution of its block; variables named "<prefix>resnet/..." with
// `prefix` the scope BuildResNet was given (and its trailing '/'), layers
// as ResNetOptions::channels names them.
std::vector<ChannelGroup> ResNetChannelGroups(const ResNetOptions& options, const std::string& prefix);

}  // namespace dflow::models

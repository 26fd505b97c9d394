// SqueezeNet 1.1 (Iandola et al. 2016; torchvision's squeezenet1_1, the
// backbone of SqueezeNet-SSD) without its classifier: a 3x3
// stride-2 stem, then fire modules (squeeze 1x1, then expand 1x1 and 3x3
// concatenated) between three max pools, to fire9's 512 channels at stride
// 16. NHWC float32 input.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "models/compress/pruning.h"

namespace dflow::models {

struct SqueezeNetOptions {
  bool training = true;  // batch-norm mode
  // torchvision's SqueezeNet has no batch norm: it was trained on ImageNet
  // with a small SGD rate. dflow trains it from scratch with Adam at SSD's
  // 1e-2, which needs batch norm after every convolution (then without the
  // convolution's bias). false builds the published network.
  bool batch_norm = true;
  // Output channels of single layers, overriding the published ones (a
  // channel-pruned network): "conv1", "fire2/squeeze", "fire2/expand1x1",
  // "fire2/expand3x3" .. "fire9/expand3x3".
  std::map<std::string, int64_t> channels{};
};

struct SqueezeNet {
  Output fire8;                            // [N, F, F, 512], F = SqueezeNetFeatureSize(S)
  Output fire9;                            // [N, F, F, 512]: the backbone's output
  std::vector<Output> variables;           // filters, biases, batch-norm gammas and betas
  std::vector<Output> batch_norm_updates;  // moving averages (training with batch norm)
};

SqueezeNet BuildSqueezeNet(const Scope& scope, const Output& images,
                           SqueezeNetOptions options = {});

// The side of fire8's and fire9's maps for an S x S input: the stem has no
// padding and the pools round up (PyTorch's ceil_mode), so 300 gives 18.
int64_t SqueezeNetFeatureSize(int64_t image_size);

// The layers whose output channels can be pruned (every convolution), each
// with the variables its channels index, named under `prefix` (the scope
// BuildSqueezeNet was given, with its trailing '/'): its filter and batch
// norm (or bias), and the input axis of the layers reading it. A fire's
// squeeze is read by its two expands; its expands by the next fire's squeeze
// at their places in the concatenation (expand 3x3 after expand 1x1). Past
// the backbone the network's user says what reads fire8 and fire9: slices
// over their whole concatenated output (offset 0), which this cuts in two.
std::vector<ChannelGroup> SqueezeNetChannelGroups(const SqueezeNetOptions& options, const std::string& prefix,
                                                  const std::vector<ChannelSlice>& fire8_readers,
                                                  const std::vector<ChannelSlice>& fire9_readers);

}  // namespace dflow::models

// MobileNetV1-SSD300 of seed 000 (Listing A.2; reference/torch_models.py
// MobileNetSSD): a conv_bn stem and 13 depthwise-separable blocks to 1024
// channels, four extra blocks (1x1 then 3x3 stride 2), and 3x3 box and class
// heads on six feature maps ([512, 1024, 512, 256, 256, 256] channels, 6
// boxes per cell). NHWC float32 input, 300x300 in the benchmarks.
#pragma once

#include <vector>

#include "graph/scope.h"

namespace dflow::models {

struct MobileNetSsd {
  Output boxes;    // [N, cells * 6 * 4]: every head's output, flattened and joined
  Output classes;  // [N, cells * 6 * num_classes]
  std::vector<Output> variables;      // weights, biases, batch-norm gammas and betas
  std::vector<Output> batch_norm_updates;  // moving averages (training only)
  std::vector<Output> features;       // the six feature maps the heads read
};

struct MobileNetSsdOptions {
  int64_t num_classes = 9;
  bool training = true;  // batch-norm mode
};

MobileNetSsd BuildMobileNetSsd(const Scope& scope, const Output& images,
                               MobileNetSsdOptions options = {});

}  // namespace dflow::models

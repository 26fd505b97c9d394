// SqueezeNet 1.1 (Iandola et al. 2016; torchvision's squeezenet1_1, the
// backbone of SqueezeNet-SSD) without its classifier: a 3x3
// stride-2 stem, then fire modules (squeeze 1x1, then expand 1x1 and 3x3
// concatenated) between three max pools, to fire9's 512 channels at stride
// 16. NHWC float32 input.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/scope.h"

namespace dflow::models {

struct SqueezeNetOptions {
  bool training = true;  // batch-norm mode
  // torchvision's SqueezeNet has no batch norm: it was trained on ImageNet
  // with a small SGD rate. dflow trains it from scratch with Adam at SSD's
  // 1e-2, which needs batch norm after every convolution (then without the
  // convolution's bias). false builds the published network.
  bool batch_norm = true;
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

}  // namespace dflow::models

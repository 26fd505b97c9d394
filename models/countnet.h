// The counting network of the flower-counting thesis (Table 3.1; reference/torch_models.py
// CountNet): three MCNN columns of conv-pool-conv-pool-conv-conv with 9/7,
// 7/5 and 5/3 kernels and 16/20/24 base channels, each brought back to full
// resolution by two stride-2 transposed convolutions, concatenated (60
// channels) and reduced by a 1x1 convolution to a one-channel density map.
// 154,621 parameters. Input NHWC float32 with height and width multiples of 4.
#pragma once

#include <vector>

#include "graph/scope.h"

namespace dflow::models {

struct CountNet {
  Output density;               // [N, H, W, 1]
  std::vector<Output> variables;
};

CountNet BuildCountNet(const Scope& scope, const Output& images);

// The seed's loss: the batch mean of each image's L2 distance,
// mean_n sqrt(sum_{h,w,c} (density - target)^2).
Output CountLoss(const Scope& scope, const Output& density, const Output& target);

}  // namespace dflow::models

// The int8 convolutions that the GPU tests compare with the CPU
// (test_cuda_quant.cc) and whose sums are checked on the host
// (test_quant_sums.cc): dense, strided SAME, dilated VALID, grouped (2
// groups), 1x1, and depthwise with multipliers 1 (strided) and 2, over an
// input of 4 channels.
#pragma once

#include <string>
#include <vector>

#include "graph/shape.h"

namespace dflow::testing {

struct Int8ConvCase {
  Shape filter;  // [KH, KW, C / groups, O], or [KH, KW, C, multiplier] when depthwise
  std::vector<int64_t> strides, dilations;
  std::string padding;
  bool depthwise;

  int64_t out_channels() const { return depthwise ? filter.dim(2) * filter.dim(3) : filter.dim(3); }
  std::string op(const std::string& stage) const {
    return (depthwise ? "QuantizedDepthwiseConv2DWithBias" : "QuantizedConv2DWithBias") + stage;
  }
};

inline std::vector<Int8ConvCase> Int8ConvCases() {
  return {{{3, 3, 4, 5}, {1, 1, 1, 1}, {1, 1, 1, 1}, "SAME", false},
          {{3, 2, 4, 6}, {1, 2, 2, 1}, {1, 1, 1, 1}, "SAME", false},
          {{2, 3, 4, 3}, {1, 1, 1, 1}, {1, 2, 2, 1}, "VALID", false},
          {{3, 3, 2, 6}, {1, 1, 2, 1}, {1, 1, 1, 1}, "SAME", false},
          {{1, 1, 4, 7}, {1, 1, 1, 1}, {1, 1, 1, 1}, "VALID", false},
          {{3, 3, 4, 1}, {1, 2, 2, 1}, {1, 1, 1, 1}, "SAME", true},
          {{3, 3, 4, 2}, {1, 1, 1, 1}, {1, 1, 1, 1}, "SAME", true}};
}

}  // namespace dflow::testing

// A convolution's geometry (ops/conv.h) flattened for the device kernels
// (conv_launch.h's ConvShape): the host code of the float convolutions
// (conv.cc) and of the int8 ones (quant_conv.cc) both launch with it.
#pragma once

#include "ops/conv.h"
#include "ops/cuda/conv_launch.h"

namespace dflow::cuda {

inline ConvShape ConvShapeOf(const ConvGeometry& g) {
  return {g.batch,    g.in_h,     g.in_w,     g.in_c,     g.k_h,      g.k_w,
          g.filter_c, g.out_c,    g.groups,   g.out_h,    g.out_w,    g.pad_top,
          g.pad_left, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w};
}

}  // namespace dflow::cuda

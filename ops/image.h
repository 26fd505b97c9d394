// Image resizing over NHWC tensors (nearest neighbour and bilinear, with
// TensorFlow's coordinate conventions) and their gradient ops. Declared in
// ops/image.cc; kernels in ops/cpu/resize.cc and ops/cpu/resize_grad.cc.
#pragma once

#include "graph/scope.h"

namespace dflow::ops {

// How output pixel o maps to input coordinates (scale = in / out):
//   half_pixel_centers: nearest:  floor((o + 0.5) * scale)
//                       bilinear: (o + 0.5) * scale - 0.5
//   align_corners:      scale = (in - 1) / (out - 1); nearest rounds o * scale
//   neither (legacy):   nearest floor(o * scale), bilinear o * scale
// clamped to the image. half_pixel_centers defaults to true here (it
// matches tf.image.resize and PyTorch's align_corners=False); TensorFlow's
// raw ops default it to false. The two cannot both be true.
struct ResizeAttrs {
  bool align_corners = false;
  bool half_pixel_centers = true;
};

// images [N, H, W, C], size an int32 [2] (new_height, new_width), both > 0.
// The output is [N, new_height, new_width, C] of the images' dtype
// (TensorFlow's ResizeBilinear always outputs float32; dflow keeps float64).
Output ResizeNearestNeighbor(const Scope& scope, const Input& images, const Input& size,
                             ResizeAttrs attrs = {});
Output ResizeBilinear(const Scope& scope, const Input& images, const Input& size,
                      ResizeAttrs attrs = {});

// The gradients: grads [N, h, w, C] of the resized images, scattered back
// onto the original [N, H, W, C]; the nearest version takes the original
// size (int32 [2]), the bilinear one the original image (for its shape).
Output ResizeNearestNeighborGrad(const Scope& scope, const Input& grads, const Input& size,
                                 ResizeAttrs attrs = {});
Output ResizeBilinearGrad(const Scope& scope, const Input& grads, const Input& original_image,
                          ResizeAttrs attrs = {});

}  // namespace dflow::ops

// Coordinate maps shared by the resize kernels (resize.cc, resize_grad.cc),
// TensorFlow's rules (see ops/image.h), computed in double. Each output row
// or column gets its source taps once per Compute; the pixel loops then run
// over channels (NHWC, contiguous).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "graph/kernel.h"

namespace dflow::resize {

struct Coordinates {
  bool align_corners = false;
  bool half_pixel_centers = true;

  explicit Coordinates(const Node& node)
      : align_corners(node.attr<bool>("align_corners")),
        half_pixel_centers(node.attr<bool>("half_pixel_centers")) {
    DFLOW_REQUIRE(!(align_corners && half_pixel_centers), node.Describe(),
                  ": align_corners and half_pixel_centers cannot both be true");
  }

  // in / out, or (in - 1) / (out - 1) with align_corners.
  double Scale(int64_t in, int64_t out) const {
    if (align_corners && out > 1) return static_cast<double>(in - 1) / static_cast<double>(out - 1);
    return static_cast<double>(in) / static_cast<double>(out);
  }

  // The input index each output index copies (nearest neighbour).
  std::vector<int64_t> Nearest(int64_t in, int64_t out) const {
    double scale = Scale(in, out);
    std::vector<int64_t> src(out);
    for (int64_t o = 0; o < out; ++o) {
      double at = half_pixel_centers ? (static_cast<double>(o) + 0.5) * scale : o * scale;
      int64_t i = static_cast<int64_t>(align_corners ? std::round(at) : std::floor(at));
      src[o] = std::clamp<int64_t>(i, 0, in - 1);
    }
    return src;
  }

  // Bilinear taps: out[o] = in[lower] * (1 - lerp) + in[upper] * lerp.
  struct Tap {
    int64_t lower, upper;
    double lerp;
  };
  std::vector<Tap> Linear(int64_t in, int64_t out) const {
    double scale = Scale(in, out);
    std::vector<Tap> taps(out);
    for (int64_t o = 0; o < out; ++o) {
      double at = half_pixel_centers ? (static_cast<double>(o) + 0.5) * scale - 0.5 : o * scale;
      double floor = std::floor(at);
      taps[o] = {std::clamp<int64_t>(static_cast<int64_t>(floor), 0, in - 1),
                 std::clamp<int64_t>(static_cast<int64_t>(std::ceil(at)), 0, in - 1), at - floor};
    }
    return taps;
  }
};

// The (height, width) of an int32 [2] size tensor, checked positive.
inline std::pair<int64_t, int64_t> ReadSize(const Node& node, const Tensor& size) {
  std::vector<int64_t> hw = ReadInt64s(size, "size");
  DFLOW_REQUIRE(hw.size() == 2 && hw[0] > 0 && hw[1] > 0, node.Describe(),
                ": size must be 2 positive values (height, width), got ", size.DebugString());
  return {hw[0], hw[1]};
}

inline void RequireNhwc(const Node& node, const Tensor& x, const char* what) {
  DFLOW_REQUIRE(x.rank() == 4, node.Describe(), ": ", what, " must be NHWC (rank 4), got ",
                x.shape().ToString());
}

// A resize from [batch, in_h, in_w, channels] to [batch, out_h, out_w, channels]
// (for the gradient ops, "in" is the original image and "out" the grads).
struct Geometry {
  int64_t batch, in_h, in_w, out_h, out_w, channels;

  Shape InShape() const { return Shape{batch, in_h, in_w, channels}; }
  Shape OutShape() const { return Shape{batch, out_h, out_w, channels}; }
  int64_t In(int64_t n, int64_t y, int64_t x) const { return ((n * in_h + y) * in_w + x) * channels; }
  int64_t Out(int64_t n, int64_t y, int64_t x) const {
    return ((n * out_h + y) * out_w + x) * channels;
  }
};

// images [N, H, W, C] resized to `size`; an empty image (H or W 0) cannot be.
inline Geometry ForwardGeometry(const Node& node, const Tensor& images, const Tensor& size) {
  RequireNhwc(node, images, "images");
  auto [out_h, out_w] = ReadSize(node, size);
  DFLOW_REQUIRE(images.dim(1) > 0 && images.dim(2) > 0, node.Describe(),
                ": cannot resize an empty image ", images.shape().ToString());
  return {images.dim(0), images.dim(1), images.dim(2), out_h, out_w, images.dim(3)};
}

// grads [N, h, w, C] of a resize back onto [N, H, W, C] (the gradient ops).
inline Geometry GradGeometry(const Node& node, const Tensor& grads, int64_t in_h, int64_t in_w) {
  RequireNhwc(node, grads, "grads");
  DFLOW_REQUIRE(grads.dim(1) > 0 && grads.dim(2) > 0, node.Describe(),
                ": grads must not be empty in height or width, got ", grads.shape().ToString());
  return {grads.dim(0), in_h, in_w, grads.dim(1), grads.dim(2), grads.dim(3)};
}

// ResizeBilinearGrad's: grads back onto original_image, which must be a
// non-empty NHWC image of grads' batch and channels.
inline Geometry BilinearGradGeometry(const Node& node, const Tensor& grads, const Tensor& original) {
  RequireNhwc(node, original, "original_image");
  Geometry g = GradGeometry(node, grads, original.dim(1), original.dim(2));
  DFLOW_REQUIRE(g.InShape() == original.shape(), node.Describe(), ": grads ",
                grads.shape().ToString(), " and original_image ", original.shape().ToString(),
                " differ in batch or channels");
  DFLOW_REQUIRE(g.in_h > 0 && g.in_w > 0, node.Describe(),
                ": original_image must not be empty, got ", original.shape().ToString());
  return g;
}

}  // namespace dflow::resize

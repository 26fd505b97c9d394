// Gradient rules of the resize ops (ops/image.cc). Each resize is linear in
// its image, out = R x for a fixed matrix R that depends only on the sizes
// and attrs, so
//   Resize:     dx = R^T g   (the ...Grad op: a scatter with the same taps)
//   ResizeGrad: d grads = R g  (the forward resize of g back to the grads' size)
// The size input and original_image (read only for its shape) get none.
#include "autodiff/gradients.h"
#include "ops/array.h"
#include "ops/image.h"

namespace dflow::autodiff {
namespace {

using Grads = std::vector<Output>;

ops::ResizeAttrs ResizeAttrsOf(Node* op) {
  return {op->attr<bool>("align_corners"), op->attr<bool>("half_pixel_centers")};
}

// (height, width) of an NHWC tensor, int32 [2].
Output SpatialSize(const Scope& s, const Output& x) {
  return ops::Slice(s, ops::Shape(s, x), {1}, {2});
}

Grads ResizeNearestGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::ResizeNearestNeighborGrad(s, g[0], SpatialSize(s, Input0(op)), ResizeAttrsOf(op)),
          Output()};
}
Grads ResizeNearestGradGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::ResizeNearestNeighbor(s, g[0], SpatialSize(s, Input0(op)), ResizeAttrsOf(op)), Output()};
}
Grads ResizeBilinearGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::ResizeBilinearGrad(s, g[0], Input0(op), ResizeAttrsOf(op)), Output()};
}
Grads ResizeBilinearGradGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::ResizeBilinear(s, g[0], SpatialSize(s, Input0(op)), ResizeAttrsOf(op)), Output()};
}

REGISTER_GRADIENT("ResizeNearestNeighbor", ResizeNearestGrad);
REGISTER_GRADIENT("ResizeNearestNeighborGrad", ResizeNearestGradGrad);
REGISTER_GRADIENT("ResizeBilinear", ResizeBilinearGrad);
REGISTER_GRADIENT("ResizeBilinearGrad", ResizeBilinearGradGrad);

}  // namespace
}  // namespace dflow::autodiff

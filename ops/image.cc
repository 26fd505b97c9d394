// Resize ops over NHWC images: declarations, shape functions and builders.
// Kernels: ops/cpu/resize.cc (forward), ops/cpu/resize_grad.cc.
#include "ops/image.h"

namespace dflow {
namespace {

void CheckResizeAttrs(const InferenceContext& ctx) {
  if (ctx.attr<bool>("align_corners") && ctx.attr<bool>("half_pixel_centers"))
    ctx.Fail("align_corners and half_pixel_centers cannot both be true");
}

// An NHWC input's shape (rank 4 with unknown dims when its rank is unknown).
Shape Nhwc(const InferenceContext& ctx, int input, const char* what) {
  const Shape& x = ctx.input_shape(input);
  if (x.unknown_rank()) return Shape{-1, -1, -1, -1};
  if (x.rank() != 4) ctx.Fail(what, " must be NHWC (rank 4), got ", x.ToString());
  return x;
}

// The (height, width) of an int32 [2] size input; -1 where unknown.
std::pair<int64_t, int64_t> SizeInput(const InferenceContext& ctx, int input) {
  const Shape& shape = ctx.input_shape(input);
  if (!shape.unknown_rank() && !(shape.rank() == 1 && (shape.dim(0) == 2 || shape.dim(0) < 0)))
    ctx.Fail("size must be an int32 vector of 2 elements (height, width), got shape ",
             shape.ToString());
  auto size = ctx.input_as_ints(input);
  if (!size) return {-1, -1};
  if ((*size)[0] <= 0 || (*size)[1] <= 0)
    ctx.Fail("size must be positive, got [", (*size)[0], ", ", (*size)[1], "]");
  return {(*size)[0], (*size)[1]};
}

// ResizeX(images, size) and ResizeNearestNeighborGrad(grads, size): [N, size, C].
ShapeFn ResizeShape(const char* what) {
  return [what](InferenceContext& ctx) {
    CheckResizeAttrs(ctx);
    Shape x = Nhwc(ctx, 0, what);
    auto [h, w] = SizeInput(ctx, 1);
    ctx.set_output(0, Shape{x.dim(0), h, w, x.dim(3)});
  };
}

// ResizeBilinearGrad(grads, original_image): original_image's shape.
void ResizeBilinearGradShape(InferenceContext& ctx) {
  CheckResizeAttrs(ctx);
  Shape grads = Nhwc(ctx, 0, "grads");
  Shape original = Nhwc(ctx, 1, "original_image");
  auto same = [](int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; };
  if (!same(grads.dim(0), original.dim(0)) || !same(grads.dim(3), original.dim(3)))
    ctx.Fail("grads ", grads.ToString(), " and original_image ", original.ToString(),
             " differ in batch or channels");
  ctx.set_output(0, Shape{original.dim(0) >= 0 ? original.dim(0) : grads.dim(0), original.dim(1),
                          original.dim(2), original.dim(3) >= 0 ? original.dim(3) : grads.dim(3)});
}

OpDefBuilder ResizeOp(const char* name, const std::vector<DType>& types = kFloatTypes) {
  OpDefBuilder b(name);
  b.attr<bool>("align_corners", false).attr<bool>("half_pixel_centers", true)
      .type_attr("T", types);
  return b;
}

// Nearest-neighbour resizing copies pixels, so it also takes uint8
// quantization codes (an int8 FPN upsamples its codes, in their range).
const std::vector<DType> kNearestTypes = {DType::kFloat32, DType::kFloat64, DType::kUInt8};

const char* kCoordinatesDoc =
    " Coordinates: half_pixel_centers (the default here; TensorFlow's raw op defaults to "
    "false) maps output pixel centres to input pixel centres; align_corners maps the corner "
    "pixels onto each other (scale (in - 1) / (out - 1)); neither uses scale in / out from "
    "the top-left corner. The two cannot both be true.";

[[maybe_unused]] const OpRegistrar kResizeOps[] = {
    ResizeOp("ResizeNearestNeighbor", kNearestTypes).input("images", "T").input("size", DType::kInt32)
        .output("resized_images", "T").shape_fn(ResizeShape("images"))
        .doc(std::string("Resizes NHWC images to size = (height, width) by copying the nearest "
                         "input pixel.") + kCoordinatesDoc),
    ResizeOp("ResizeBilinear").input("images", "T").input("size", DType::kInt32)
        .output("resized_images", "T").shape_fn(ResizeShape("images"))
        .doc(std::string("Resizes NHWC images to size = (height, width) by bilinear "
                         "interpolation of the 4 nearest input pixels (output dtype = input "
                         "dtype).") + kCoordinatesDoc),
    ResizeOp("ResizeNearestNeighborGrad").input("grads", "T").input("size", DType::kInt32)
        .output("output", "T").shape_fn(ResizeShape("grads"))
        .doc("ResizeNearestNeighbor's backward pass: each element of grads is added to the "
             "input pixel it was copied from; size is the original (height, width)."),
    ResizeOp("ResizeBilinearGrad").input("grads", "T").input("original_image", "T")
        .output("output", "T").shape_fn(ResizeBilinearGradShape)
        .doc("ResizeBilinear's backward pass: each element of grads is spread over the 4 "
             "input pixels it interpolated, with the same weights. Output: original_image's "
             "shape (its values are not read)."),
};

AttrMap Attrs(ops::ResizeAttrs a) {
  return {{"align_corners", a.align_corners}, {"half_pixel_centers", a.half_pixel_centers}};
}

// Builds op(x, size) with a literal size converted to int32.
Output ResizeLike(const char* op, const Scope& scope, const Input& x, const Input& size,
                  ops::ResizeAttrs attrs) {
  Scope literals = scope.NewSubScope("");
  return scope.AddOp(op, {x.ToOutput(literals), size.ToOutput(literals, DType::kInt32)},
                     Attrs(attrs));
}

}  // namespace

namespace ops {

Output ResizeNearestNeighbor(const Scope& scope, const Input& images, const Input& size,
                             ResizeAttrs attrs) {
  return ResizeLike("ResizeNearestNeighbor", scope, images, size, attrs);
}
Output ResizeBilinear(const Scope& scope, const Input& images, const Input& size,
                      ResizeAttrs attrs) {
  return ResizeLike("ResizeBilinear", scope, images, size, attrs);
}
Output ResizeNearestNeighborGrad(const Scope& scope, const Input& grads, const Input& size,
                                 ResizeAttrs attrs) {
  return ResizeLike("ResizeNearestNeighborGrad", scope, grads, size, attrs);
}
Output ResizeBilinearGrad(const Scope& scope, const Input& grads, const Input& original_image,
                          ResizeAttrs attrs) {
  return scope.AddOp("ResizeBilinearGrad", {grads, original_image}, Attrs(attrs));
}

}  // namespace ops
}  // namespace dflow

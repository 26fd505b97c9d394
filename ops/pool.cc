// Pooling ops over NHWC images: declarations, shape functions, builders and
// the window geometry. Kernels: ops/cpu/pool.cc (forward), ops/cpu/pool_grad.cc.
#include "ops/pool.h"

#include <array>

#include "ops/explicit_paddings.h"
#include "ops/reduce.h"
#include "ops/state.h"

namespace dflow {

WindowDim MakeWindowDim(int64_t in, int64_t size, int64_t stride, bool same) {
  WindowDim d{in, -1, size, stride, 0};
  if (in < 0) return d;
  if (same) {
    // Window sizes and strides are attrs a graph file may set to anything.
    d.out = in / stride + (in % stride != 0);
    const char* what = "the pooled input";
    int64_t reach = CheckedAdd(CheckedMul(d.out - 1, stride, what), size, what);
    d.pad_before = std::max<int64_t>(reach - in, 0) / 2;
  } else {
    if (in < size)
      Fail(Code::kInvalidArgument, "VALID padding needs the window (", size,
           ") to fit in the input (", in, ")");
    d.out = (in - size) / stride + 1;
  }
  return d;
}

WindowDim MakeExplicitWindowDim(int64_t in, int64_t size, int64_t stride, int64_t before,
                                int64_t after, const char* dim_name) {
  for (auto [pad, where] : {std::pair{before, "before"}, std::pair{after, "after"}})
    if (pad >= size)
      Fail(Code::kInvalidArgument, "explicit_paddings: the ", dim_name, " pad ", where, " (", pad,
           ") must be smaller than the window's ", dim_name, " (", size,
           "), or a window would cover padding only");
  WindowDim d{in, -1, size, stride, before};
  if (in < 0) return d;
  if (in == 0)
    Fail(Code::kInvalidArgument, "EXPLICIT padding needs a non-empty input: its ", dim_name,
         " is 0, so every window would cover padding only");
  const char* what = "the padded input";
  int64_t padded = CheckedAdd(CheckedAdd(in, before, what), after, what);
  if (padded < size)
    Fail(Code::kInvalidArgument, "EXPLICIT padding needs the window's ", dim_name, " (", size,
         ") to fit in the padded input's (", in, " + ", before, " + ", after, ")");
  d.out = (padded - size) / stride + 1;
  return d;
}

namespace {

void CheckWindowAttr(const std::vector<int64_t>& v, const char* name) {
  if (v.size() != 4)
    Fail(Code::kInvalidArgument, name, " must have 4 entries [1, rows, cols, 1], got ",
         v.size());
  for (int64_t x : v)
    if (x < 1) Fail(Code::kInvalidArgument, name, " entries must be >= 1, got ", x);
  if (v[0] != 1 || v[3] != 1)
    Fail(Code::kInvalidArgument, name, " must be 1 on the batch and channel dims, got [", v[0],
         ", ", v[1], ", ", v[2], ", ", v[3], "]");
}

}  // namespace

PoolGeometry MakePoolGeometry(const Shape& input, const std::vector<int64_t>& ksize,
                              const std::vector<int64_t>& strides, const std::string& padding,
                              const std::vector<int64_t>& explicit_paddings) {
  CheckWindowAttr(ksize, "ksize");
  CheckWindowAttr(strides, "strides");
  if (padding != "SAME" && padding != "VALID" && padding != "EXPLICIT")
    Fail(Code::kInvalidArgument, "padding must be SAME, VALID or EXPLICIT, got '", padding, "'");
  const bool is_explicit = padding == "EXPLICIT";
  std::array<int64_t, 4> pads = ParseExplicitPaddings(is_explicit, explicit_paddings);
  Shape nhwc = input.unknown_rank() ? Shape{-1, -1, -1, -1} : input;
  if (nhwc.rank() != 4)
    Fail(Code::kInvalidArgument, "input must be NHWC (rank 4), got ", input.ToString());
  PoolGeometry g;
  g.batch = nhwc.dim(0);
  g.channels = nhwc.dim(3);
  if (is_explicit) {
    g.rows = MakeExplicitWindowDim(nhwc.dim(1), ksize[1], strides[1], pads[0], pads[1], "height");
    g.cols = MakeExplicitWindowDim(nhwc.dim(2), ksize[2], strides[2], pads[2], pads[3], "width");
  } else {
    bool same = padding == "SAME";
    g.rows = MakeWindowDim(nhwc.dim(1), ksize[1], strides[1], same);
    g.cols = MakeWindowDim(nhwc.dim(2), ksize[2], strides[2], same);
  }
  return g;
}

namespace {

PoolGeometry GeometryOf(const InferenceContext& ctx, const Shape& input) {
  return MakePoolGeometry(input, ctx.attr<std::vector<int64_t>>("ksize"),
                          ctx.attr<std::vector<int64_t>>("strides"),
                          ctx.attr<std::string>("padding"),
                          ctx.attr<std::vector<int64_t>>("explicit_paddings"));
}

void PoolShape(InferenceContext& ctx) {
  ctx.set_output(0, GeometryOf(ctx, ctx.input_shape(0)).output_shape());
}

// The pooled shape of `input` must agree with `grad` (input `grad_index`).
void CheckGradShape(InferenceContext& ctx, const Shape& input, int grad_index) {
  Shape pooled = GeometryOf(ctx, input).output_shape();
  const Shape& grad = ctx.input_shape(grad_index);
  if (!grad.IsCompatibleWith(pooled))
    ctx.Fail("grad ", grad.ToString(), " does not match the pooled shape ", pooled.ToString());
}

// MaxPoolGrad: dx has orig_input's shape.
void MaxPoolGradShape(InferenceContext& ctx) {
  CheckGradShape(ctx, ctx.input_shape(0), 2);
  ctx.set_output(0, ctx.input_shape(0));
}
// MaxPoolGradGrad: y has orig_output's (the pooled) shape.
void MaxPoolGradGradShape(InferenceContext& ctx) {
  const Shape& x = ctx.input_shape(0);
  if (!ctx.input_shape(2).IsCompatibleWith(x))
    ctx.Fail("grad ", ctx.input_shape(2).ToString(), " must have orig_input's shape ",
             x.ToString());
  ctx.set_output(0, GeometryOf(ctx, x).output_shape());
}
void AvgPoolGradShape(InferenceContext& ctx) {
  Shape x = ctx.input_as_shape(0);
  CheckGradShape(ctx, x, 1);
  ctx.set_output(0, x);
}

OpDefBuilder PoolOp(const char* name, const std::vector<DType>& types = kFloatTypes) {
  OpDefBuilder b(name);
  b.attr<std::vector<int64_t>>("ksize").attr<std::vector<int64_t>>("strides")
      .attr<std::string>("padding")
      .attr<std::vector<int64_t>>("explicit_paddings", std::vector<int64_t>{})
      .type_attr("T", types);
  return b;
}

// MaxPool also takes uint8: quantization codes (MIN_FIRST) grow with the
// value they stand for, so the largest code is the code of the largest
// value, in the same range (an int8 network pools its codes directly).
const std::vector<DType> kMaxPoolTypes = {DType::kFloat32, DType::kFloat64, DType::kUInt8};

const char* kWindowDoc =
    " ksize and strides are [1, rows, cols, 1]; padding SAME gives out = ceil(in / stride) "
    "with pad_before = pad_total / 2, VALID gives out = (in - k) / stride + 1, EXPLICIT "
    "takes explicit_paddings (before, after per NHWC dim, as Conv2D's; each pad < k) and "
    "gives out = (in + before + after - k) / stride + 1. Padding only places the windows: "
    "it is never read.";

[[maybe_unused]] const OpRegistrar kPoolOps[] = {
    PoolOp("MaxPool", kMaxPoolTypes).input("input", "T").output("output", "T").shape_fn(PoolShape)
        .doc(std::string("Largest element of each window of an NHWC image (uint8: of quantization "
                         "codes, whose range the result keeps).") + kWindowDoc),
    PoolOp("AvgPool").input("value", "T").output("output", "T").shape_fn(PoolShape)
        .doc(std::string("Mean of each window of an NHWC image over the elements inside the "
                         "image (padding is not counted, as TensorFlow).") + kWindowDoc),
    PoolOp("MaxPoolGrad").input("orig_input", "T").input("orig_output", "T")
        .input("grad", "T").output("output", "T").shape_fn(MaxPoolGradShape)
        .doc("MaxPool's backward pass: each grad element is added to the first maximum "
             "(row-major within the window) of orig_input. Output: orig_input's shape."),
    PoolOp("MaxPoolGradGrad").input("orig_input", "T").input("orig_output", "T")
        .input("grad", "T").output("output", "T").shape_fn(MaxPoolGradGradShape)
        .doc("The adjoint of MaxPoolGrad in `grad` (of orig_input's shape): output[o] = "
             "grad[argmax of window o], a gather of orig_output's shape."),
    PoolOp("AvgPoolGrad").input("orig_input_shape", DType::kInt32).input("grad", "T")
        .output("output", "T").shape_fn(AvgPoolGradShape)
        .doc("AvgPool's backward pass: each grad element divided evenly among the valid "
             "elements of its window. orig_input_shape is an int32 [4] vector."),
};

AttrMap WindowAttrs(const ops::PoolWindow& w) {
  return {{"ksize", w.ksize},
          {"strides", w.strides},
          {"padding", w.padding},
          {"explicit_paddings", w.explicit_paddings}};
}

}  // namespace

namespace ops {

Output MaxPool(const Scope& scope, const Input& input, const PoolWindow& window) {
  return scope.AddOp("MaxPool", {input}, WindowAttrs(window));
}
Output AvgPool(const Scope& scope, const Input& input, const PoolWindow& window) {
  return scope.AddOp("AvgPool", {input}, WindowAttrs(window));
}
Output MaxPoolGrad(const Scope& scope, const Input& orig_input, const Input& orig_output,
                   const Input& grad, const PoolWindow& window) {
  return scope.AddOp("MaxPoolGrad", {orig_input, orig_output, grad}, WindowAttrs(window));
}
Output MaxPoolGradGrad(const Scope& scope, const Input& orig_input, const Input& orig_output,
                       const Input& grad, const PoolWindow& window) {
  return scope.AddOp("MaxPoolGradGrad", {orig_input, orig_output, grad}, WindowAttrs(window));
}
Output AvgPoolGrad(const Scope& scope, const Input& orig_input_shape, const Input& grad,
                   const PoolWindow& window) {
  // Convert literals here: AddOp would give a literal shape grad's dtype.
  Scope literals = scope.NewSubScope("");
  return scope.AddOp("AvgPoolGrad",
                     {orig_input_shape.ToOutput(literals, DType::kInt32), grad.ToOutput(literals)},
                     WindowAttrs(window));
}
Output GlobalAvgPool(const Scope& scope, const Input& x, GlobalPoolAttrs attrs) {
  return Mean(scope, x, {1, 2}, {.keep_dims = attrs.keep_dims});
}

}  // namespace ops
}  // namespace dflow

// 2-D convolution: Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter
// declarations (each through ConvOp, which adds the shared attrs), shape
// functions and builders (the geometry is in
// conv_geometry.cc). Kernels: ops/cpu/conv2d*.cc.
#include "ops/conv.h"

#include "ops/array.h"
#include "ops/state.h"

namespace dflow {
namespace {

ConvParams ParamsOf(const InferenceContext& ctx) {
  return ParseConvParams(ctx.attr<std::vector<int64_t>>("strides"),
                         ctx.attr<std::vector<int64_t>>("dilations"),
                         ctx.attr<std::string>("padding"),
                         ctx.attr<std::vector<int64_t>>("explicit_paddings"));
}

void Conv2DShape(InferenceContext& ctx) {
  ConvGeometry g = MakeConvGeometry(ParamsOf(ctx), ctx.input_shape(0), ctx.input_shape(1));
  ctx.set_output(0, g.output_shape());
}

// A sizes input (int32 [4]) as a shape: rank 4, dims unknown where the value is.
Shape SizesShape(const InferenceContext& ctx, int i, const char* name) {
  const Shape& vec = ctx.input_shape(i);
  if (!vec.unknown_rank() && (vec.rank() != 1 || (vec.dim(0) >= 0 && vec.dim(0) != 4)))
    ctx.Fail(name, " must be a vector of 4 sizes (NHWC), got shape ", vec.ToString());
  Shape sizes = ctx.input_as_shape(i);
  if (sizes.unknown_rank()) return Shape{-1, -1, -1, -1};
  for (int64_t d : sizes.dims())
    if (d < -1) ctx.Fail(name, " must be >= 0, got ", sizes.ToString());
  return sizes;
}

// dx has shape input_sizes; the batch comes from out_backprop when the sizes are unknown.
void BackpropInputShape(InferenceContext& ctx) {
  Shape input = SizesShape(ctx, 0, "input_sizes");
  const Shape& filter = ctx.input_shape(1);
  const Shape& dy = ctx.input_shape(2);
  ConvGeometry g = MakeConvGeometry(ParamsOf(ctx), input, filter);
  CheckOutBackprop(g, input, filter, dy);
  if (input.dim(0) < 0 && !dy.unknown_rank() && dy.rank() == 4) input.set_dim(0, dy.dim(0));
  ctx.set_output(0, input);
}

// dw has shape filter_sizes; out-channels come from out_backprop when the sizes are unknown.
void BackpropFilterShape(InferenceContext& ctx) {
  const Shape& input = ctx.input_shape(0);
  Shape filter = SizesShape(ctx, 1, "filter_sizes");
  const Shape& dy = ctx.input_shape(2);
  ConvGeometry g = MakeConvGeometry(ParamsOf(ctx), input, filter);
  CheckOutBackprop(g, input, filter, dy);
  if (filter.dim(3) < 0 && !dy.unknown_rank() && dy.rank() == 4) filter.set_dim(3, dy.dim(3));
  ctx.set_output(0, filter);
}

// Conv2D's shape, and a bias [O] matching its channels.
void FusedConv2DShape(InferenceContext& ctx) {
  ParseConvActivation(ctx.attr<std::string>("activation"));
  ConvGeometry g = MakeConvGeometry(ParamsOf(ctx), ctx.input_shape(0), ctx.input_shape(1));
  const Shape& bias = ctx.input_shape(2);
  if (!bias.unknown_rank() &&
      (bias.rank() != 1 || (bias.dim(0) >= 0 && g.out_c >= 0 && bias.dim(0) != g.out_c)))
    ctx.Fail("bias must be a vector of the ", g.out_c, " output channels, got shape ",
             bias.ToString());
  ctx.set_output(0, g.output_shape());
}

// An op declaration with Conv2D's attrs and dtype already added.
OpDefBuilder ConvOp(std::string name) {
  OpDefBuilder b(std::move(name));
  b.attr<std::vector<int64_t>>("strides", std::vector<int64_t>{1, 1, 1, 1})
      .attr<std::vector<int64_t>>("dilations", std::vector<int64_t>{1, 1, 1, 1})
      .attr<std::string>("padding", "SAME")
      .attr<std::vector<int64_t>>("explicit_paddings", std::vector<int64_t>{})
      .type_attr("T", kFloatTypes);
  return b;
}

// Conv2DTranspose's output size along one dim (ops/conv.h), k' = (k-1)*dilation + 1.
int64_t TransposedSize(const ops::Conv2DTransposeAttrs& a, int dim, int64_t in, int64_t k) {
  int64_t stride = a.strides[dim], extra = a.output_padding[dim];
  if (extra < 0 || extra >= stride)
    Fail(Code::kInvalidArgument, "Conv2DTranspose: output_padding must be in [0, stride), got ",
         extra, " with stride ", stride);
  if (a.padding == "SAME") {
    if (extra != 0)
      Fail(Code::kInvalidArgument, "Conv2DTranspose: output_padding needs VALID or EXPLICIT "
           "padding (SAME gives in * stride)");
    return CheckedMul(in, stride, "Conv2DTranspose's output size");
  }
  // Attrs may hold anything: the arithmetic is checked.
  const char* what = "Conv2DTranspose's output size";
  int64_t window = CheckedAdd(CheckedMul(k - 1, a.dilations[dim], what), 1 + extra, what);
  int64_t size = CheckedAdd(CheckedMul(in - 1, stride, what), window, what);
  if (a.padding == "EXPLICIT")
    size -= CheckedAdd(a.explicit_paddings[2 * dim], a.explicit_paddings[2 * dim + 1], what);
  return size;
}

ops::Conv2DAttrs TransposeConvAttrs(const ops::Conv2DTransposeAttrs& a) {
  if (a.strides.size() != 2 || a.dilations.size() != 2 || a.output_padding.size() != 2)
    Fail(Code::kInvalidArgument, "Conv2DTranspose: strides, dilations and output_padding need 2 "
         "entries (height, width)");
  if (a.groups < 1) Fail(Code::kInvalidArgument, "Conv2DTranspose: groups must be >= 1, got ", a.groups);
  ops::Conv2DAttrs conv{{1, a.strides[0], a.strides[1], 1}, {1, a.dilations[0], a.dilations[1], 1},
                        a.padding, {}};
  if (a.padding == "EXPLICIT") {
    if (a.explicit_paddings.size() != 4)
      Fail(Code::kInvalidArgument, "Conv2DTranspose: explicit_paddings needs 4 entries (top, "
           "bottom, left, right), got ", a.explicit_paddings.size());
    const auto& e = a.explicit_paddings;
    conv.explicit_paddings = {0, 0, e[0], e[1], e[2], e[3], 0, 0};
  }
  return conv;
}

// The int32 [4] output size of a Conv2DTranspose of x by w: a Const when
// x's batch is known, else [Shape(x)[0], OH, OW, O] computed at run time.
// The transposed convolution's output [H, W, C] from x's height and width
// and the filter's [KH, KW, O], all needed while building.
std::vector<int32_t> TransposedHwc(const Output& x, const Output& w,
                                   const ops::Conv2DTransposeAttrs& a) {
  const Shape& in = x.shape();
  const Shape& f = w.shape();
  if (in.unknown_rank() || in.rank() != 4 || in.dim(1) < 0 || in.dim(2) < 0 ||
      f.unknown_rank() || f.rank() != 4 || f.dim(0) < 0 || f.dim(1) < 0 || f.dim(2) < 0)
    Fail(Code::kInvalidArgument, "Conv2DTranspose: needs the input's height and width and the "
         "filter's [KH, KW, O] while building, or an explicit output_shape; input is ",
         in.ToString(), ", filter ", f.ToString());
  if (in.dim(3) >= 0 && in.dim(3) % a.groups != 0)
    Fail(Code::kInvalidArgument, "Conv2DTranspose: the input's ", in.dim(3),
         " channels do not split into ", a.groups, " groups; input is ", in.ToString());
  return {static_cast<int32_t>(TransposedSize(a, 0, in.dim(1), f.dim(0))),
          static_cast<int32_t>(TransposedSize(a, 1, in.dim(2), f.dim(1))),
          static_cast<int32_t>(f.dim(2) * a.groups)};
}

// input_sizes for Conv2DBackpropInput: a constant, unless the batch is known
// only at run time.
Output TransposeSizes(const Scope& s, const Output& x, const Output& w,
                      const ops::Conv2DTransposeAttrs& a) {
  if (!a.output_shape.empty()) {
    if (a.output_shape.size() != 4)
      Fail(Code::kInvalidArgument, "Conv2DTranspose: output_shape needs 4 entries (NHWC), got ",
           a.output_shape.size());
    const Shape& f = w.shape();
    if (!f.unknown_rank() && f.rank() == 4 && f.dim(2) >= 0 &&
        a.output_shape[3] != f.dim(2) * a.groups)
      Fail(Code::kInvalidArgument, "Conv2DTranspose: output_shape has ", a.output_shape[3],
           " channels but the filter ", f.ToString(), " in ", a.groups, " groups makes ",
           f.dim(2) * a.groups);
    return ops::Const(s, Tensor::FromVector<int32_t>({a.output_shape.begin(), a.output_shape.end()}));
  }
  std::vector<int32_t> hwc = TransposedHwc(x, w, a);
  if (x.shape().dim(0) >= 0) {
    hwc.insert(hwc.begin(), static_cast<int32_t>(x.shape().dim(0)));
    return ops::Const(s, Tensor::FromVector<int32_t>(hwc));
  }
  Output batch = ops::Slice(s, ops::Shape(s, x), {0}, {1});
  return ops::Concat(s, {batch, ops::Const(s, Tensor::FromVector<int32_t>(hwc))}, 0);
}

}  // namespace

AttrMap ConvAttrMap(const ops::Conv2DAttrs& a) {
  auto wide = [](const std::vector<int>& v) { return std::vector<int64_t>(v.begin(), v.end()); };
  return {{"strides", wide(a.strides)},
          {"dilations", wide(a.dilations)},
          {"padding", a.padding},
          {"explicit_paddings", wide(a.explicit_paddings)}};
}

[[maybe_unused]] static OpRegistrar conv2d_op = ConvOp("Conv2D")
    .input("input", "T")
    .input("filter", "T")
    .output("output", "T")
    .shape_fn(Conv2DShape)
    .doc("2-D convolution (cross-correlation, as in TensorFlow) of input [N, H, W, C] by filter "
         "[KH, KW, C / groups, O], giving [N, OH, OW, O]. groups = C / filter's dim 2 "
         "(depthwise: filter [KH, KW, 1, C * multiplier]). strides and dilations have 4 NHWC "
         "entries (N and C 1); padding SAME (OH = ceil(H / stride)), VALID or EXPLICIT "
         "(explicit_paddings: before, after per NHWC dim).");

[[maybe_unused]] static OpRegistrar fused_conv2d_op = ConvOp("_FusedConv2D")
    .input("input", "T")
    .input("filter", "T")
    .input("bias", "T")
    .output("output", "T")
    .attr<std::string>("activation", "")
    .shape_fn(FusedConv2DShape)
    .doc("Inference only: activation(Conv2D(input, filter) + bias), bias [O], in one kernel "
         "that adds the bias and clamps each output block while it is in cache. activation is "
         "\"\" (none), \"Relu\" or \"Relu6\"; the other attrs are Conv2D's. Written by the "
         "FuseConvBiasActivation graph pass from Conv2D -> BiasAdd [-> Relu | Relu6].");

[[maybe_unused]] static OpRegistrar conv2d_backprop_input_op = ConvOp("Conv2DBackpropInput")
    .input("input_sizes", DType::kInt32)
    .input("filter", "T")
    .input("out_backprop", "T")
    .output("output", "T")
    .shape_fn(BackpropInputShape)
    .doc("The gradient of Conv2D with respect to its input, of shape input_sizes (int32 [4]), "
         "given the filter and the gradient of Conv2D's output; same attrs as Conv2D. Also the "
         "transposed convolution (ops::Conv2DTranspose).");

[[maybe_unused]] static OpRegistrar conv2d_backprop_filter_op = ConvOp("Conv2DBackpropFilter")
    .input("input", "T")
    .input("filter_sizes", DType::kInt32)
    .input("out_backprop", "T")
    .output("output", "T")
    .shape_fn(BackpropFilterShape)
    .doc("The gradient of Conv2D with respect to its filter, of shape filter_sizes (int32 [4]), "
         "given Conv2D's input and the gradient of its output; same attrs as Conv2D.");

namespace ops {

Output Conv2D(const Scope& scope, const Input& input, const Input& filter, Conv2DAttrs attrs) {
  return scope.AddOp("Conv2D", {input, filter}, ConvAttrMap(attrs));
}

Output FusedConv2D(const Scope& scope, const Input& input, const Input& filter, const Input& bias,
                   Conv2DAttrs attrs, const std::string& activation) {
  AttrMap map = ConvAttrMap(attrs);
  map["activation"] = activation;
  return scope.AddOp("_FusedConv2D", {input, filter, bias}, std::move(map));
}

Output Conv2DBackpropInput(const Scope& scope, const Input& input_sizes, const Input& filter,
                           const Input& out_backprop, Conv2DAttrs attrs) {
  return scope.AddOp("Conv2DBackpropInput", {input_sizes, filter, out_backprop},
                     ConvAttrMap(attrs));
}

Output Conv2DBackpropFilter(const Scope& scope, const Input& input, const Input& filter_sizes,
                            const Input& out_backprop, Conv2DAttrs attrs) {
  return scope.AddOp("Conv2DBackpropFilter", {input, filter_sizes, out_backprop},
                     ConvAttrMap(attrs));
}

Output Conv2DTranspose(const Scope& scope, const Input& input, const Input& filter,
                       Conv2DTransposeAttrs attrs) {
  Conv2DAttrs conv = TransposeConvAttrs(attrs);
  Scope helpers = scope.NewSubScope("");
  Output x = input.ToOutput(helpers);
  Output w = filter.ToOutput(helpers, x.dtype());
  Output sizes = TransposeSizes(helpers, x, w, attrs);
  if (KnownValue(sizes)) return Conv2DBackpropInput(scope, sizes, w, x, conv);
  // The batch is known only at run time, so the sizes are computed and the
  // shape function cannot see H, W and C. A Reshape to [-1, H, W, C] (no
  // copy) gives the next layer the shape it needs while building.
  Output y = Conv2DBackpropInput(helpers, sizes, w, x, conv);
  std::vector<int32_t> dims = TransposedHwc(x, w, attrs);
  dims.insert(dims.begin(), -1);
  return Reshape(scope, y, Tensor::FromVector<int32_t>(dims));
}

}  // namespace ops
}  // namespace dflow

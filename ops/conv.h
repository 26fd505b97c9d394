// Builders for 2-D convolution in NHWC (TensorFlow's ops and attrs):
// Conv2D, its two gradients Conv2DBackpropInput / Conv2DBackpropFilter, and
// Conv2DTranspose (a Conv2DBackpropInput with a computed output size). Also
// the window geometry that the shape functions and every device's kernels share.
#pragma once

#include <string>
#include <vector>

#include "graph/scope.h"

namespace dflow {
namespace ops {

// Input [N, H, W, C], filter [KH, KW, C / groups, O] (HWIO), output
// [N, OH, OW, O]. groups = C / filter's dim 2 (depthwise: filter [KH, KW, 1,
// C * multiplier], groups = C); O must be divisible by groups. Output channel
// o of group g = o / (O / groups) sees input channels g*C/groups .. (g+1)*C/groups:
//   y[n, oh, ow, o] = sum_{kh, kw, c} x[n, oh*sh - pad_top + kh*dh,
//                                        ow*sw - pad_left + kw*dw, g*C/groups + c]
//                                     * filter[kh, kw, c, o]     (zero outside x)
struct Conv2DAttrs {
  std::vector<int> strides = {1, 1, 1, 1};    // NHWC; N and C must be 1
  std::vector<int> dilations = {1, 1, 1, 1};  // NHWC; N and C must be 1
  // "SAME": OH = ceil(H / sh), pad_total = max((OH-1)*sh + (KH-1)*dh + 1 - H, 0),
  // pad_top = pad_total / 2 (the extra row goes at the bottom). "VALID": no
  // padding. "EXPLICIT": explicit_paddings, 8 entries (before, after) per NHWC
  // dim; N and C must be 0.
  std::string padding = "SAME";
  std::vector<int> explicit_paddings = {};
};
Output Conv2D(const Scope& scope, const Input& input, const Input& filter, Conv2DAttrs attrs = {});

// Inference only (no gradient): activation(Conv2D(input, filter) + bias) in
// one kernel, bias [O], activation "" (none), "Relu" or "Relu6". The graph
// pass FuseConvBiasActivation (ops/passes/inference_passes.h) writes these;
// building one by hand is for tests.
Output FusedConv2D(const Scope& scope, const Input& input, const Input& filter, const Input& bias,
                   Conv2DAttrs attrs = {}, const std::string& activation = "");

// The gradient of Conv2D with respect to its input, of shape input_sizes
// (an int32 [4] vector): dx = sum over windows of out_backprop * filter.
Output Conv2DBackpropInput(const Scope& scope, const Input& input_sizes, const Input& filter,
                           const Input& out_backprop, Conv2DAttrs attrs = {});
// The gradient of Conv2D with respect to its filter, of shape filter_sizes
// (an int32 [4] vector): dw[kh, kw, c, o] = sum_{n, oh, ow} x[window] * out_backprop.
Output Conv2DBackpropFilter(const Scope& scope, const Input& input, const Input& filter_sizes,
                            const Input& out_backprop, Conv2DAttrs attrs = {});

// Transposed convolution ("deconvolution"): x [N, H, W, C] with filter
// [KH, KW, O, C] (TensorFlow's conv2d_transpose convention: the *output*
// channels in dim 2) gives y [N, OH, OW, O], the Conv2DBackpropInput whose
// forward Conv2D maps y's shape back to x's. Per spatial dim, with k' =
// (k-1)*dilation + 1:
//   output_shape given: that size (it must map back to x under the conv)
//   "VALID":    out = (in-1)*stride + k' + output_padding
//   "EXPLICIT": out = (in-1)*stride + k' - before - after + output_padding
//   "SAME":     out = in*stride (output_padding must be 0)
// PyTorch's ConvTranspose2d(k, stride, padding=p, output_padding=op), out =
// (in-1)*stride - 2p + k + op, is "EXPLICIT" with paddings {p, p, p, p} and
// output_padding {op, op} (its weight [C, O, KH, KW] is this filter
// transposed to [KH, KW, O, C]). output_padding must be < stride.
struct Conv2DTransposeAttrs {
  std::vector<int> strides = {1, 1};    // height, width
  std::vector<int> dilations = {1, 1};  // height, width
  std::string padding = "SAME";
  std::vector<int> explicit_paddings = {};  // top, bottom, left, right (EXPLICIT only)
  std::vector<int> output_padding = {0, 0};  // extra rows / columns at the bottom / right
  std::vector<int64_t> output_shape = {};    // [N, OH, OW, O]; empty: computed as above
  // Filter [KH, KW, O / groups, C]: each group of C / groups input channels
  // makes O / groups output channels (PyTorch's ConvTranspose2d groups).
  int groups = 1;
};
Output Conv2DTranspose(const Scope& scope, const Input& input, const Input& filter,
                       Conv2DTransposeAttrs attrs = {});

}  // namespace ops

// The window geometry of one Conv2D, shared by shape functions and kernels.
enum class ConvPadding { kSame, kValid, kExplicit };

// Conv2D's attrs, checked: strides and dilations (height, width), padding
// and, for EXPLICIT, the (before, after) pads of height and width.
struct ConvParams {
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  ConvPadding padding = ConvPadding::kSame;
  int64_t explicit_pads[4] = {0, 0, 0, 0};  // top, bottom, left, right
};
// The node attrs of Conv2DAttrs (strides, dilations, padding,
// explicit_paddings), for the builders of every conv-like op.
AttrMap ConvAttrMap(const ops::Conv2DAttrs& attrs);

// Throws kInvalidArgument naming the bad attr.
ConvParams ParseConvParams(const std::vector<int64_t>& strides,
                           const std::vector<int64_t>& dilations, const std::string& padding,
                           const std::vector<int64_t>& explicit_paddings);
// Reads and checks a node's conv attrs.
ConvParams ConvParamsOf(const Node& node);

// What a _FusedConv2D applies after its bias (its attr "activation").
enum class ConvActivation { kNone, kRelu, kRelu6 };
// "" | "Relu" | "Relu6"; throws kInvalidArgument naming the others.
ConvActivation ParseConvActivation(const std::string& name);

// Every size of one convolution; -1 where the shapes leave it unknown.
struct ConvGeometry {
  int64_t batch, in_h, in_w, in_c;
  int64_t k_h, k_w, filter_c, out_c;  // filter [k_h, k_w, filter_c, out_c]
  int64_t groups;                     // in_c / filter_c
  int64_t out_h, out_w;
  int64_t pad_top, pad_left;
  int64_t stride_h, stride_w, dilation_h, dilation_w;

  int64_t group_in_c() const { return filter_c; }
  int64_t group_out_c() const { return out_c / groups; }
  bool depthwise() const { return filter_c == 1 && groups > 1; }
  Shape output_shape() const { return Shape{batch, out_h, out_w, out_c}; }
};
// The geometry of a conv of `input` [N, H, W, C] by `filter` (partial shapes
// allowed). Throws kInvalidArgument naming both shapes when the channels do
// not match, the groups do not divide O, or the filter is larger than the
// padded input.
ConvGeometry MakeConvGeometry(const ConvParams& params, const Shape& input, const Shape& filter);
// Throws kInvalidArgument naming the shapes unless out_backprop (partial
// shapes allowed) is the output shape of g, the conv of input by filter.
void CheckOutBackprop(const ConvGeometry& g, const Shape& input, const Shape& filter,
                      const Shape& out_backprop);

}  // namespace dflow

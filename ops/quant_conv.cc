// The fused int8 convolutions (ops/quant.h): declarations, shape functions
// and builders. The arithmetic is in the op docs; kernels:
// ops/cpu/quantized_conv.cc.
#include "graph/op_def.h"
#include "ops/conv.h"
#include "ops/quant.h"

namespace dflow {
namespace {

// TensorFlow's depthwise filter [KH, KW, C, M] is, byte for byte, the
// grouped Conv2D filter [KH, KW, 1, C * M] with C groups.
Shape GroupedFilterShape(const Shape& filter, bool depthwise) {
  if (!depthwise || filter.unknown_rank() || filter.rank() != 4) return filter;
  const int64_t c = filter.dim(2), m = filter.dim(3);
  return Shape{filter.dim(0), filter.dim(1), 1, c >= 0 && m >= 0 ? c * m : -1};
}

void RequireScalarInput(InferenceContext& ctx, int input, const char* name) {
  const Shape& s = ctx.input_shape(input);
  if (!s.unknown_rank() && s.rank() != 0) ctx.Fail(name, " must be a scalar, got ", s.ToString());
}

// A scalar (or a vector of one), or one value per output channel.
void ChannelRangeShape(InferenceContext& ctx, int input, const char* name, int64_t channels) {
  const Shape& s = ctx.input_shape(input);
  if (s.unknown_rank() || s.rank() == 0) return;
  if (s.rank() != 1 || (channels >= 0 && s.dim(0) > 1 && s.dim(0) != channels))
    ctx.Fail(name, " must be a scalar or a vector of the ", channels, " output channels, got ", s.ToString());
}

// `dequantize`: the ...AndDequantize ops, with no output range in or out.
void QuantizedConvShape(InferenceContext& ctx, bool depthwise, bool dequantize) {
  const ConvParams params = ParseConvParams(
      ctx.attr<std::vector<int64_t>>("strides"), ctx.attr<std::vector<int64_t>>("dilations"),
      ctx.attr<std::string>("padding"), ctx.attr<std::vector<int64_t>>("explicit_paddings"));
  const Shape& filter = ctx.input_shape(1);
  if (depthwise && !filter.unknown_rank() && filter.rank() != 4)
    ctx.Fail("the depthwise filter must be [KH, KW, C, multiplier], got ", filter.ToString());
  const Shape& input = ctx.input_shape(0);
  if (depthwise && !filter.unknown_rank() && !input.unknown_rank() && input.rank() == 4 && filter.dim(2) >= 0 &&
      input.dim(3) >= 0 && filter.dim(2) != input.dim(3))
    ctx.Fail("a depthwise filter's dim 2 must be the input's ", input.dim(3), " channels, got ", filter.ToString());
  const ConvGeometry g = MakeConvGeometry(params, input, GroupedFilterShape(filter, depthwise));
  const Shape& bias = ctx.input_shape(2);
  if (!bias.unknown_rank() && (bias.rank() != 1 || (g.out_c >= 0 && bias.dim(0) >= 0 && bias.dim(0) != g.out_c)))
    ctx.Fail("bias must be a vector of the ", g.out_c, " output channels, got ", bias.ToString());
  RequireScalarInput(ctx, 3, "min_input");
  RequireScalarInput(ctx, 4, "max_input");
  ChannelRangeShape(ctx, 5, "min_filter", g.out_c);
  ChannelRangeShape(ctx, 6, "max_filter", g.out_c);
  ctx.set_output(0, g.output_shape());
  if (dequantize) return;
  RequireScalarInput(ctx, 7, "min_freezed_output");
  RequireScalarInput(ctx, 8, "max_freezed_output");
  ctx.set_output(1, Shape());
  ctx.set_output(2, Shape());
}

constexpr char kProduct[] =
    " input [N, H, W, C] holds MIN_FIRST uint8 codes of [min_input, max_input] (step si, zero point zi, as "
    "Dequantize reads them; the padding is zi, the code of 0.0), filter SCALED int8 codes with step sw[o] per "
    "output channel o (min_filter, max_filter: scalars or one per output channel). The exact integer sum "
    "acc[n, oh, ow, o] = sum over the window of (input - zi) filter becomes y = acc si sw[o] + bias[o]";
constexpr char kRequantized[] =
    ", requantized to MIN_FIRST uint8 codes of [min_freezed_output, max_freezed_output] (step so, zero point zo): "
    "code = round(acc si sw[o] / so + bias[o] / so + zo) (half away from zero), clamped to [0, 255]; "
    "min_output and max_output repeat that range.";

constexpr char kDequantized[] =
    ", float32 (then ReLU for ...AndRelu...): no output range, as dynamic quantization needs, whose "
    "input range is the input's own, found at run time.";

// ...AndRequantize (uint8 codes out) or ...AndDequantize (float32 out).
OpDefBuilder QuantizedConvOp(const std::string& name, bool depthwise, const std::string& what) {
  const bool dequantize = name.ends_with("AndDequantize");
  OpDefBuilder b(name);
  b.input("input", DType::kUInt8)
      .input("filter", DType::kInt8)
      .input("bias", DType::kFloat32)
      .input("min_input", DType::kFloat32)
      .input("max_input", DType::kFloat32)
      .input("min_filter", DType::kFloat32)
      .input("max_filter", DType::kFloat32);
  if (dequantize) {
    b.output("output", DType::kFloat32);
  } else {
    b.input("min_freezed_output", DType::kFloat32)
        .input("max_freezed_output", DType::kFloat32)
        .output("output", DType::kUInt8)
        .output("min_output", DType::kFloat32)
        .output("max_output", DType::kFloat32);
  }
  b.attr<std::vector<int64_t>>("strides", std::vector<int64_t>{1, 1, 1, 1})
      .attr<std::vector<int64_t>>("dilations", std::vector<int64_t>{1, 1, 1, 1})
      .attr<std::string>("padding", "SAME")
      .attr<std::vector<int64_t>>("explicit_paddings", std::vector<int64_t>{})
      .shape_fn([depthwise, dequantize](InferenceContext& ctx) { QuantizedConvShape(ctx, depthwise, dequantize); })
      .doc(what + kProduct + (dequantize ? kDequantized : kRequantized));
  return b;
}

const std::string kConv = "The int8 Conv2D (groups as Conv2D: filter [KH, KW, C / groups, O]; the strides, dilations "
                          "and padding are Conv2D's).";
const std::string kDepthwise = "The int8 depthwise convolution: filter [KH, KW, C, multiplier] (TensorFlow's "
                               "DepthwiseConv2dNative layout; output channel c * multiplier + m), the strides, "
                               "dilations and padding are Conv2D's.";
const std::string kRelu = " Then ReLU: codes below the zero point's (0.0) become it.";

}  // namespace

[[maybe_unused]] static OpRegistrar quantized_conv_op =
    QuantizedConvOp("QuantizedConv2DWithBiasAndRequantize", false, kConv);
[[maybe_unused]] static OpRegistrar quantized_conv_relu_op =
    QuantizedConvOp("QuantizedConv2DWithBiasAndReluAndRequantize", false, kConv + kRelu);
[[maybe_unused]] static OpRegistrar quantized_depthwise_op =
    QuantizedConvOp("QuantizedDepthwiseConv2DWithBiasAndRequantize", true, kDepthwise);
[[maybe_unused]] static OpRegistrar quantized_depthwise_relu_op =
    QuantizedConvOp("QuantizedDepthwiseConv2DWithBiasAndReluAndRequantize", true, kDepthwise + kRelu);
[[maybe_unused]] static OpRegistrar dequantized_conv_op =
    QuantizedConvOp("QuantizedConv2DWithBiasAndDequantize", false, kConv);
[[maybe_unused]] static OpRegistrar dequantized_conv_relu_op =
    QuantizedConvOp("QuantizedConv2DWithBiasAndReluAndDequantize", false, kConv);
[[maybe_unused]] static OpRegistrar dequantized_depthwise_op =
    QuantizedConvOp("QuantizedDepthwiseConv2DWithBiasAndDequantize", true, kDepthwise);
[[maybe_unused]] static OpRegistrar dequantized_depthwise_relu_op =
    QuantizedConvOp("QuantizedDepthwiseConv2DWithBiasAndReluAndDequantize", true, kDepthwise);

namespace ops {

QuantizedProduct QuantizedConv2DWithBiasAndRequantize(const Scope& scope, const Input& input, const Input& filter,
                                                      const Input& bias, const Input& min_input,
                                                      const Input& max_input, const Input& min_filter,
                                                      const Input& max_filter, const Input& min_freezed_output,
                                                      const Input& max_freezed_output, QuantizedConv2DAttrs attrs) {
  const std::string op = StrCat("Quantized", attrs.depthwise ? "DepthwiseConv2D" : "Conv2D", "WithBias",
                                attrs.relu ? "AndRelu" : "", "AndRequantize");
  Node* node = scope.AddOp(op,
                           {input, filter, bias, min_input, max_input, min_filter, max_filter, min_freezed_output,
                            max_freezed_output},
                           ConvAttrMap(attrs.conv));
  return {Output(node, 0), Output(node, 1), Output(node, 2)};
}

Output QuantizedConv2DWithBiasAndDequantize(const Scope& scope, const Input& input, const Input& filter,
                                            const Input& bias, const Input& min_input, const Input& max_input,
                                            const Input& min_filter, const Input& max_filter,
                                            QuantizedConv2DAttrs attrs) {
  const std::string op = StrCat("Quantized", attrs.depthwise ? "DepthwiseConv2D" : "Conv2D", "WithBias",
                                attrs.relu ? "AndRelu" : "", "AndDequantize");
  return Output(scope.AddOp(op, {input, filter, bias, min_input, max_input, min_filter, max_filter},
                            ConvAttrMap(attrs.conv)),
                0);
}

}  // namespace ops
}  // namespace dflow

// QuantizeV2 and Dequantize: declarations, shape functions and builders (see
// ops/quant.h). The arithmetic is in the op docs and ops/cpu/quantize.cc.
#include "ops/quant.h"

#include "graph/op_def.h"

namespace dflow {
namespace {

const std::vector<DType> kCodeTypes = {DType::kInt8, DType::kUInt8};

// The range inputs (1 and 2): scalars, or vectors of input's `axis` dim.
void CheckRanges(InferenceContext& ctx) {
  const Shape& input = ctx.input_shape(0);
  const std::string mode = ctx.attr<std::string>("mode");
  if (mode != "MIN_FIRST" && mode != "SCALED")
    ctx.Fail("mode must be MIN_FIRST or SCALED, got '", mode, "' (MIN_COMBINED is not supported)");
  const int64_t axis = ctx.attr<int64_t>("axis");
  if (axis != -1 && mode != "SCALED") ctx.Fail("axis (a range per slice) needs mode SCALED, got ", mode);
  const int64_t rank = input.unknown_rank() ? -1 : input.rank();
  if (axis != -1 && rank >= 0 && (axis < 0 || axis >= rank))
    ctx.Fail("axis ", axis, " is out of range for input ", input.ToString());
  for (int i : {1, 2}) {
    const Shape& range = ctx.input_shape(i);
    if (range.unknown_rank()) continue;
    if (axis == -1 && range.rank() != 0)
      ctx.Fail(i == 1 ? "min_range" : "max_range", " must be a scalar without axis, got ", range.ToString());
    if (axis != -1 && (range.rank() != 1 || (rank >= 0 && input.dim(static_cast<int>(axis)) >= 0 &&
                                             range.dim(0) >= 0 && range.dim(0) != input.dim(static_cast<int>(axis)))))
      ctx.Fail(i == 1 ? "min_range" : "max_range", " must be a vector of input's dim ", axis, " (",
               rank >= 0 ? input.dim(static_cast<int>(axis)) : -1, " entries), got ", range.ToString());
  }
}

void QuantizeShape(InferenceContext& ctx) {
  CheckRanges(ctx);
  const std::string round_mode = ctx.attr<std::string>("round_mode");
  if (round_mode != "HALF_AWAY_FROM_ZERO" && round_mode != "HALF_TO_EVEN")
    ctx.Fail("round_mode must be HALF_AWAY_FROM_ZERO or HALF_TO_EVEN, got '", round_mode, "'");
  if (round_mode == "HALF_TO_EVEN" && ctx.attr<std::string>("mode") != "SCALED")
    ctx.Fail("round_mode HALF_TO_EVEN needs mode SCALED");
  if (ctx.attr<double>("ensure_minimum_range") < 0)
    ctx.Fail("ensure_minimum_range must be >= 0, got ", ctx.attr<double>("ensure_minimum_range"));
  ctx.set_output(0, ctx.input_shape(0));
  ctx.set_output(1, ctx.input_shape(1));
  ctx.set_output(2, ctx.input_shape(2));
}

void DequantizeShape(InferenceContext& ctx) {
  CheckRanges(ctx);
  ctx.set_output(0, ctx.input_shape(0));
}

void ScalarOrVector(InferenceContext& ctx, int input, int64_t n, const char* name) {
  const Shape& s = ctx.input_shape(input);
  if (s.unknown_rank() || s.rank() == 0) return;
  if (s.rank() != 1 || (n >= 0 && s.dim(0) >= 0 && s.dim(0) != n))
    ctx.Fail(name, " must be a scalar or a vector of ", n, " (one per column), got ", s.ToString());
}

void RequireScalar(InferenceContext& ctx, int input, const char* name) {
  const Shape& s = ctx.input_shape(input);
  if (!s.unknown_rank() && s.rank() != 0) ctx.Fail(name, " must be a scalar, got ", s.ToString());
}

void QuantizedMatMulShape(InferenceContext& ctx) {
  const Shape& a = ctx.input_shape(0);
  const Shape& b = ctx.input_shape(1);
  if (!a.unknown_rank() && a.rank() != 2) ctx.Fail("a must be a matrix, got ", a.ToString());
  if (!b.unknown_rank() && b.rank() != 2) ctx.Fail("b must be a matrix, got ", b.ToString());
  if (ctx.attr<std::string>("input_quant_mode") != "MIN_FIRST")
    ctx.Fail("input_quant_mode must be MIN_FIRST (a as uint8 with a zero point), got '",
             ctx.attr<std::string>("input_quant_mode"), "'");
  if (ctx.attr<bool>("transpose_a")) ctx.Fail("transpose_a is not supported (a is [m, k] activations)");
  const bool tb = ctx.attr<bool>("transpose_b");
  const int64_t m = a.unknown_rank() ? -1 : a.dim(0), k = a.unknown_rank() ? -1 : a.dim(1);
  const int64_t kb = b.unknown_rank() ? -1 : b.dim(tb ? 1 : 0), n = b.unknown_rank() ? -1 : b.dim(tb ? 0 : 1);
  if (k >= 0 && kb >= 0 && k != kb)
    ctx.Fail("inner dimensions differ: a is ", a.ToString(), ", b is ", b.ToString(), tb ? " (transpose_b)" : "");
  const Shape& bias = ctx.input_shape(2);
  if (!bias.unknown_rank() && (bias.rank() != 1 || (n >= 0 && bias.dim(0) >= 0 && bias.dim(0) != n)))
    ctx.Fail("bias must be a vector of ", n, " (one per column), got ", bias.ToString());
  RequireScalar(ctx, 3, "min_a");
  RequireScalar(ctx, 4, "max_a");
  ScalarOrVector(ctx, 5, n, "min_b");
  ScalarOrVector(ctx, 6, n, "max_b");
  RequireScalar(ctx, 7, "min_freezed_output");
  RequireScalar(ctx, 8, "max_freezed_output");
  ctx.set_output(0, Shape{m, n});
  ctx.set_output(1, Shape());
  ctx.set_output(2, Shape());
}

void QuantizedAddShape(InferenceContext& ctx) {
  const Shape& x = ctx.input_shape(0);
  const Shape& y = ctx.input_shape(1);
  if (!x.unknown_rank() && !y.unknown_rank() && x.IsFullyDefined() && y.IsFullyDefined() && x != y)
    ctx.Fail("x and y must have one shape (no broadcasting), got ", x.ToString(), " and ", y.ToString());
  for (int i = 2; i < 8; ++i) RequireScalar(ctx, i, "every range input");
  ctx.set_output(0, x.unknown_rank() ? y : x);
  ctx.set_output(1, Shape());
  ctx.set_output(2, Shape());
}

OpDefBuilder QuantizedAddOp(const char* name) {
  OpDefBuilder b(name);
  b.input("x", DType::kUInt8)
      .input("y", DType::kUInt8)
      .input("min_x", DType::kFloat32)
      .input("max_x", DType::kFloat32)
      .input("min_y", DType::kFloat32)
      .input("max_y", DType::kFloat32)
      .input("min_freezed_output", DType::kFloat32)
      .input("max_freezed_output", DType::kFloat32)
      .output("z", DType::kUInt8)
      .output("min_z", DType::kFloat32)
      .output("max_z", DType::kFloat32)
      .shape_fn(QuantizedAddShape);
  return b;
}

const char* kQuantizedAddDoc =
    "The int8 residual addition: x and y (one shape) hold MIN_FIRST uint8 codes of [min_x, max_x] "
    "and [min_y, max_y] (steps sx, sy, zero points zx, zy, as Dequantize reads them); their values' "
    "sum is requantized to MIN_FIRST codes of the frozen [min_freezed_output, max_freezed_output] "
    "(step so, zero point zo): z = round((x - zx) sx / so + (y - zy) sy / so + zo) (half away from "
    "zero), clamped to [0, 255]";

void QuantizedReluShape(InferenceContext& ctx) {
  RequireScalar(ctx, 1, "min_features");
  RequireScalar(ctx, 2, "max_features");
  ctx.set_output(0, ctx.input_shape(0));
  ctx.set_output(1, Shape());
  ctx.set_output(2, Shape());
}

}  // namespace

REGISTER_OP("QuantizedRelu")
    .input("features", DType::kUInt8)
    .input("min_features", DType::kFloat32)
    .input("max_features", DType::kFloat32)
    .output("activations", DType::kUInt8)
    .output("min_activations", DType::kFloat32)
    .output("max_activations", DType::kFloat32)
    .shape_fn(QuantizedReluShape)
    .doc("ReLU of MIN_FIRST uint8 codes of [min_features, max_features], in the same range: codes below "
         "the zero point (the code of 0.0, as Dequantize reads them) become it; min_activations and "
         "max_activations repeat the range.");

[[maybe_unused]] const OpRegistrar kQuantizedAddOps[] = {
    QuantizedAddOp("QuantizedAddAndRequantize").doc(std::string(kQuantizedAddDoc) + "; min_z and max_z repeat the frozen range."),
    QuantizedAddOp("QuantizedAddAndReluAndRequantize")
        .doc(std::string(kQuantizedAddDoc) + ", and below zo (a ReLU of the sum); min_z and max_z repeat the frozen range."),
};

REGISTER_OP("QuantizeV2")
    .input("input", DType::kFloat32)
    .input("min_range", DType::kFloat32)
    .input("max_range", DType::kFloat32)
    .output("output", "T")
    .output("output_min", DType::kFloat32)
    .output("output_max", DType::kFloat32)
    .type_attr("T", kCodeTypes)
    .attr<std::string>("mode", "MIN_FIRST")
    .attr<std::string>("round_mode", "HALF_AWAY_FROM_ZERO")
    .attr<bool>("narrow_range", false)
    .attr<int64_t>("axis", -1)
    .attr<double>("ensure_minimum_range", 0.01)
    .shape_fn(QuantizeShape)
    .doc("Float to int8 / uint8 codes. First the range is made to hold 0 and to be wide enough: "
         "min = min(0, min_range), max = max(0, max_range, min + e) with e = ensure_minimum_range * "
         "max(1, |min_range|, |max_range|). MIN_FIRST (one range): with the step g = (max - min) / 255, "
         "code = round(x / g) - round(min / g) + lowest(T), clamped (min / g taken in double, as Dequantize "
         "takes it, so that 0.0 codes exactly to the zero point it reads). SCALED (per tensor, or "
         "per slice along axis): with lo = lowest(T) (+1 when narrow_range) and hi = highest(T), "
         "f = min(lo / min if lo min > 0, hi / max if hi max > 0), the range becomes [lo / f, hi / f] "
         "and code = round(clamp(x, lo / f, hi / f) f). output_min and output_max are the adjusted "
         "range, which Dequantize takes.");

REGISTER_OP("Dequantize")
    .input("input", "T")
    .input("min_range", DType::kFloat32)
    .input("max_range", DType::kFloat32)
    .output("output", DType::kFloat32)
    .type_attr("T", kCodeTypes)
    .attr<std::string>("mode", "MIN_FIRST")
    .attr<bool>("narrow_range", false)
    .attr<int64_t>("axis", -1)
    .shape_fn(DequantizeShape)
    .doc("Codes back to float, QuantizeV2's inverse. MIN_FIRST: with s = (max - min) / 255, "
         "x = (round(min / s) + code - lowest(T)) s, so the zero point's code gives exactly 0.0 (TensorFlow "
         "rounds with a float copy of s and adds a double one, a few ulps off). "
         "SCALED: x = code g with g = max / highest(T) for uint8, max(min / lo, max / hi) for int8 "
         "(lo = lowest(T), +1 when narrow_range), per slice along axis when given.");

REGISTER_OP("QuantizedMatMulWithBiasAndRequantize")
    .input("a", DType::kUInt8)
    .input("b", DType::kInt8)
    .input("bias", DType::kFloat32)
    .input("min_a", DType::kFloat32)
    .input("max_a", DType::kFloat32)
    .input("min_b", DType::kFloat32)
    .input("max_b", DType::kFloat32)
    .input("min_freezed_output", DType::kFloat32)
    .input("max_freezed_output", DType::kFloat32)
    .output("out", DType::kUInt8)
    .output("min_out", DType::kFloat32)
    .output("max_out", DType::kFloat32)
    .attr<bool>("transpose_a", false)
    .attr<bool>("transpose_b", false)
    .attr<std::string>("input_quant_mode", "MIN_FIRST")
    .shape_fn(QuantizedMatMulShape)
    .doc("The int8 dense layer: a [m, k] holds MIN_FIRST codes of [min_a, max_a] (step sa, zero point "
         "za, as Dequantize reads them), b [k, n] (or [n, k] with transpose_b) SCALED int8 codes with "
         "step sb[j] per column (min_b, max_b: scalars or one per column). The exact integer sum "
         "acc[i, j] = sum_p (a[i, p] - za) b[p, j] becomes y = acc sa sb[j] + bias[j], requantized "
         "to MIN_FIRST uint8 codes of [min_freezed_output, max_freezed_output] (step so, zero point zo): "
         "code = round(acc sa sb[j] / so + bias[j] / so + zo) (half away from zero), clamped to [0, 255]; "
         "min_out and max_out repeat that range. transpose_a is not supported.");

namespace ops {

Quantized QuantizeV2(const Scope& scope, const Input& input, const Input& min_range, const Input& max_range,
                     DType dtype, QuantizeV2Attrs attrs) {
  Node* node = scope.AddOp("QuantizeV2", {input, min_range, max_range},
                           {{"T", dtype},
                            {"mode", attrs.mode},
                            {"round_mode", attrs.round_mode},
                            {"narrow_range", attrs.narrow_range},
                            {"axis", attrs.axis},
                            {"ensure_minimum_range", attrs.ensure_minimum_range}});
  return {Output(node, 0), Output(node, 1), Output(node, 2)};
}

Output Dequantize(const Scope& scope, const Input& input, const Input& min_range, const Input& max_range,
                  DequantizeAttrs attrs) {
  return scope.AddOp("Dequantize", {input, min_range, max_range},
                     {{"mode", attrs.mode}, {"narrow_range", attrs.narrow_range}, {"axis", attrs.axis}});
}

QuantizedProduct QuantizedMatMulWithBiasAndRequantize(const Scope& scope, const Input& a, const Input& b,
                                                      const Input& bias, const Input& min_a, const Input& max_a,
                                                      const Input& min_b, const Input& max_b,
                                                      const Input& min_freezed_output,
                                                      const Input& max_freezed_output, QuantizedMatMulAttrs attrs) {
  Node* node = scope.AddOp("QuantizedMatMulWithBiasAndRequantize",
                           {a, b, bias, min_a, max_a, min_b, max_b, min_freezed_output, max_freezed_output},
                           {{"transpose_b", attrs.transpose_b}, {"input_quant_mode", attrs.input_quant_mode}});
  return {Output(node, 0), Output(node, 1), Output(node, 2)};
}

}  // namespace ops
}  // namespace dflow

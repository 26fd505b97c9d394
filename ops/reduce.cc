// Reductions: Sum, Mean, Max, Min, Prod over an `axis` input, ArgMax/ArgMin
// over a `dimension` input. Kernels: ops/cpu/reduce.cc, ops/cpu/argminmax.cc.
#include "ops/reduce.h"

namespace dflow {

std::vector<bool> ReductionMask(const std::vector<int64_t>& axes, const Shape& shape) {
  int rank = shape.rank();
  std::vector<bool> mask(rank, false);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      Fail(Code::kInvalidArgument, "axis ", axis, " is out of range for a tensor of shape ",
           shape.ToString(), " (valid: [", -rank, ", ", rank, "))");
    mask[axis < 0 ? axis + rank : axis] = true;
  }
  return mask;
}

namespace {

void ReductionShape(InferenceContext& ctx) {
  const Shape& in = ctx.input_shape(0);
  const Shape& axis_shape = ctx.input_shape(1);
  if (!axis_shape.unknown_rank() && axis_shape.rank() > 1)
    ctx.Fail("axis must be a scalar or a vector, got shape ", axis_shape.ToString());
  if (in.unknown_rank()) return;
  bool keep_dims = ctx.attr<bool>("keep_dims");
  auto axes = ctx.input_as_ints(1);
  if (!axes) {
    // Unknown axes: each dim is kept or becomes 1 (keep_dims), and a scalar
    // axis removes exactly one dim.
    if (keep_dims) ctx.set_output(0, Shape(std::vector<int64_t>(in.rank(), Shape::kUnknownDim)));
    else if (!axis_shape.unknown_rank() && axis_shape.rank() == 0 && in.rank() > 0)
      ctx.set_output(0, Shape(std::vector<int64_t>(in.rank() - 1, Shape::kUnknownDim)));
    return;
  }
  std::vector<bool> mask = ReductionMask(*axes, in);
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (!mask[i]) dims.push_back(in.dim(i));
    else if (keep_dims) dims.push_back(1);
  }
  ctx.set_output(0, Shape(std::move(dims)));
}

void ArgMinMaxShape(InferenceContext& ctx) {
  const Shape& in = ctx.input_shape(0);
  const Shape& dim_shape = ctx.input_shape(1);
  if (!dim_shape.unknown_rank() && dim_shape.rank() != 0)
    ctx.Fail("dimension must be a scalar, got shape ", dim_shape.ToString());
  if (in.unknown_rank()) return;
  if (in.rank() == 0) ctx.Fail("input must have rank >= 1, got a scalar");
  auto dimension = ctx.input_as_ints(1);
  if (!dimension) {
    ctx.set_output(0, Shape(std::vector<int64_t>(in.rank() - 1, Shape::kUnknownDim)));
    return;
  }
  std::vector<bool> mask = ReductionMask(*dimension, in);
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i)
    if (!mask[i]) dims.push_back(in.dim(i));
  ctx.set_output(0, Shape(std::move(dims)));
}

// The declaration shared by the five reductions over `axis`.
void DeclareReduction(const char* name, const std::vector<DType>& types, const std::string& doc) {
  OpDefBuilder def(name);
  def.input("input", "T")
      .input("axis", "Tidx")
      .output("output", "T")
      .attr<bool>("keep_dims", false)
      .type_attr("T", types)
      .type_attr("Tidx", kIndexTypes, DType::kInt32)
      .shape_fn(ReductionShape)
      .doc(doc + " over the dims listed in `axis` (an int32/int64 scalar or vector; negative "
                 "values count from the end; an empty list reduces nothing). keep_dims keeps "
                 "them with length 1. TensorFlow calls the `axis` input `reduction_indices`.");
  OpRegistrar{def};
}

void DeclareArgMinMax(const char* name, const std::string& doc) {
  OpDefBuilder def(name);
  def.input("input", "T")
      .input("dimension", "Tidx")
      .output("output", "output_type")
      .type_attr("T", kNumberTypes)
      .type_attr("Tidx", kIndexTypes, DType::kInt32)
      .type_attr("output_type", kIndexTypes, DType::kInt64)
      .shape_fn(ArgMinMaxShape)
      .doc(doc + " along `dimension` (an int scalar, negative counts from the end), which is "
                 "removed from the shape. Ties and NaNs give the first index; an empty "
                 "dimension is an error.");
  OpRegistrar{def};
}

[[maybe_unused]] const bool kDeclared = [] {
  DeclareReduction("Sum", kNumberTypes, "Sum of elements");
  DeclareReduction("Prod", kNumberTypes, "Product of elements (1 over an empty set)");
  DeclareReduction("Mean", kNumberTypes,
                   "Mean of elements (NaN over an empty set; integers divide with truncation "
                   "and an empty integer mean is an error)");
  DeclareReduction("Max", kNumberTypes,
                   "Largest element (NaN if any is NaN; the lowest value, -inf for floats, over "
                   "an empty set, as TensorFlow)");
  DeclareReduction("Min", kNumberTypes,
                   "Smallest element (NaN if any is NaN; the highest value, +inf for floats, "
                   "over an empty set, as TensorFlow)");
  DeclareArgMinMax("ArgMax", "Index of the largest element");
  DeclareArgMinMax("ArgMin", "Index of the smallest element");
  return true;
}();

Output Reduction(const char* op, const Scope& scope, const Input& input, const Input& axis,
                 ops::ReduceAttrs attrs) {
  // Convert literals here: AddOp would give a literal axis the input's dtype.
  Scope literals = scope.NewSubScope("");
  return scope.AddOp(op, {input.ToOutput(literals), axis.ToOutput(literals)},
                     {{"keep_dims", attrs.keep_dims}});
}

Output ArgMinMax(const char* op, const Scope& scope, const Input& input, const Input& dimension,
                 ops::ArgMinMaxAttrs attrs) {
  Scope literals = scope.NewSubScope("");
  return scope.AddOp(op, {input.ToOutput(literals), dimension.ToOutput(literals)},
                     {{"output_type", attrs.output_type}});
}

// SumToShape's output is the target shape; the input must broadcast to it.
void SumToShapeShape(InferenceContext& ctx) {
  Shape target = ctx.input_as_shape(1);
  const Shape& in = ctx.input_shape(0);
  if (!target.unknown_rank() && !in.unknown_rank()) {
    if (target.rank() > in.rank())
      ctx.Fail("cannot sum ", in.ToString(), " down to the larger rank of ", target.ToString());
    for (int i = 0; i < target.rank(); ++i) {
      int64_t t = target.dim(i), d = in.dim(in.rank() - target.rank() + i);
      if (t >= 0 && d >= 0 && t != 1 && t != d)
        ctx.Fail("cannot sum ", in.ToString(), " down to ", target.ToString(),
                 ": dim ", i, " of the target is neither 1 nor ", d);
    }
  }
  ctx.set_output(0, target);
}

}  // namespace

REGISTER_OP("SumToShape")
    .input("input", "T")
    .input("shape", "Tshape")
    .output("output", "T")
    .type_attr("T", kNumberTypes)
    .type_attr("Tshape", kIndexTypes, DType::kInt32)
    .shape_fn(SumToShapeShape)
    .doc("The inverse of numpy broadcasting: sums `input` over its leading dims and over "
         "the dims where `shape` has 1, so that the result has `shape` (an input that "
         "broadcasts to `shape`). Autodiff uses it to un-broadcast gradients; when the "
         "shapes already match the input passes through without a copy.");

namespace ops {

Output SumToShape(const Scope& s, const Input& input, const Input& shape) {
  Scope literals = s.NewSubScope("");
  return s.AddOp("SumToShape", {input.ToOutput(literals), shape.ToOutput(literals)});
}
Output Sum(const Scope& s, const Input& input, const Input& axis, ReduceAttrs attrs) {
  return Reduction("Sum", s, input, axis, attrs);
}
Output Mean(const Scope& s, const Input& input, const Input& axis, ReduceAttrs attrs) {
  return Reduction("Mean", s, input, axis, attrs);
}
Output Max(const Scope& s, const Input& input, const Input& axis, ReduceAttrs attrs) {
  return Reduction("Max", s, input, axis, attrs);
}
Output Min(const Scope& s, const Input& input, const Input& axis, ReduceAttrs attrs) {
  return Reduction("Min", s, input, axis, attrs);
}
Output Prod(const Scope& s, const Input& input, const Input& axis, ReduceAttrs attrs) {
  return Reduction("Prod", s, input, axis, attrs);
}
Output ArgMax(const Scope& s, const Input& input, const Input& dimension, ArgMinMaxAttrs attrs) {
  return ArgMinMax("ArgMax", s, input, dimension, attrs);
}
Output ArgMin(const Scope& s, const Input& input, const Input& dimension, ArgMinMaxAttrs attrs) {
  return ArgMinMax("ArgMin", s, input, dimension, attrs);
}

}  // namespace ops
}  // namespace dflow

// Builders for the array ops: reshaping, transposing, joining, splitting,
// slicing, padding, gathering, tiling and filling tensors, and reading shapes.
// Op and attr names follow TensorFlow (ConcatV2, GatherV2, StridedSlice masks...).
#pragma once

#include <vector>

#include "graph/scope.h"

namespace dflow::ops {

// Same elements, new shape; `shape` may hold one -1 (inferred from the size).
Output Reshape(const Scope& scope, const Input& tensor, const Input& shape);
// Output dim i is input dim perm[i].
Output Transpose(const Scope& scope, const Input& x, const Input& perm);
// Joins `values` along `axis` (op ConcatV2; negative axis counts from the end).
Output Concat(const Scope& scope, const std::vector<Input>& values, const Input& axis);
// Cuts `value` into num_split equal pieces along `axis`.
std::vector<Output> Split(const Scope& scope, const Input& axis, const Input& value,
                          int64_t num_split);
// input[begin : begin + size]; a size of -1 takes the rest of the dimension.
Output Slice(const Scope& scope, const Input& input, const Input& begin, const Input& size);

// Bit i of each mask refers to entry i of begin/end/strides, as in TensorFlow.
struct StridedSliceAttrs {
  int64_t begin_mask = 0;        // ignore begin[i]: start at the first (last) element
  int64_t end_mask = 0;          // ignore end[i]: run to the end (start)
  int64_t ellipsis_mask = 0;     // entry i is `...`
  int64_t new_axis_mask = 0;     // entry i inserts a dim of size 1
  int64_t shrink_axis_mask = 0;  // entry i picks index begin[i] and drops the dim
};
// Numpy/TensorFlow basic indexing: x[begin:end:strides] with negative
// indices, negative strides and clamping.
Output StridedSlice(const Scope& scope, const Input& input, const Input& begin, const Input& end,
                    const Input& strides, StridedSliceAttrs attrs = {});
// The gradient of StridedSlice: zeros of shape `shape` with dy written to the
// positions StridedSlice(x of that shape, begin, end, strides, attrs) reads.
Output StridedSliceGrad(const Scope& scope, const Input& shape, const Input& begin,
                        const Input& end, const Input& strides, const Input& dy,
                        StridedSliceAttrs attrs = {});

// Pads with zeros; paddings is an int [rank, 2] table of (before, after).
Output Pad(const Scope& scope, const Input& input, const Input& paddings);
// Pads with the scalar constant_values.
Output PadV2(const Scope& scope, const Input& input, const Input& paddings,
             const Input& constant_values);

struct GatherV2Attrs {
  int64_t batch_dims = 0;  // leading dims shared by params and indices
};
// Picks slices of `params` along `axis` by `indices`; an index outside
// [0, params.shape[axis]) is an error.
Output GatherV2(const Scope& scope, const Input& params, const Input& indices, const Input& axis,
                GatherV2Attrs attrs = {});
// output[segment_ids[i]] += data[i]; negative ids are dropped.
Output UnsortedSegmentSum(const Scope& scope, const Input& data, const Input& segment_ids,
                          const Input& num_segments);
// Repeats the input multiples[i] times along dim i.
Output Tile(const Scope& scope, const Input& input, const Input& multiples);
// Inserts a dim of size 1 at `axis` (in [-rank-1, rank]).
Output ExpandDims(const Scope& scope, const Input& input, const Input& axis);

struct SqueezeAttrs {
  std::vector<int64_t> squeeze_dims;  // empty: every dim of size 1
};
// Removes dims of size 1.
Output Squeeze(const Scope& scope, const Input& input, SqueezeAttrs attrs = {});
// Numpy-broadcasts the input to `shape`.
Output BroadcastTo(const Scope& scope, const Input& input, const Input& shape);

struct OneHotAttrs {
  int64_t axis = -1;  // where the new depth dim goes; -1 = last
};
// on_value where indices == position along the new dim, off_value elsewhere.
Output OneHot(const Scope& scope, const Input& indices, const Input& depth, const Input& on_value,
              const Input& off_value, OneHotAttrs attrs = {});
// A tensor of shape `dims` filled with the scalar `value`.
Output Fill(const Scope& scope, const Input& dims, const Input& value);
Output ZerosLike(const Scope& scope, const Input& x);
Output OnesLike(const Scope& scope, const Input& x);
// [start, start + delta, ...) up to, not including, limit.
Output Range(const Scope& scope, const Input& start, const Input& limit, const Input& delta);

struct ShapeAttrs {
  DType out_type = DType::kInt32;
};
// The input's shape as a vector (op Shape); a known value while building
// when the input's shape is fully known.
Output Shape(const Scope& scope, const Input& input, ShapeAttrs attrs = {});
// Number of elements, as a scalar.
Output Size(const Scope& scope, const Input& input, ShapeAttrs attrs = {});
// Number of dimensions, as an int32 scalar.
Output Rank(const Scope& scope, const Input& input);
Output Identity(const Scope& scope, const Input& input);
// Identity that gradients do not flow through.
Output StopGradient(const Scope& scope, const Input& input);

}  // namespace dflow::ops

// Shape arithmetic of the array ops, shared by their shape functions (on
// partial shapes, where -1 is an unknown dim) and their CPU kernels (on real
// shapes), so that the shapes known while building and at run time agree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/tensor.h"

namespace dflow::array {

// axis in [-rank, rank) -> [0, rank); throws naming `what` and the range.
int CanonicalAxis(int64_t axis, int rank, std::string_view what = "axis");
// "[2,-1,3]": a list of ints as the user wrote it (Shape::ToString shows -1 as ?).
std::string IntsString(const std::vector<int64_t>& values);
// "[1,2]": the position of flat element i in a tensor of `shape` (row-major).
std::string IndexString(int64_t i, const Shape& shape);

// The value of an int32/int64 scalar (or one-element vector) input.
int64_t ReadScalarInt(const Tensor& t, std::string_view what);
// The values of an int32/int64 tensor of any rank (the paddings table), row-major.
std::vector<int64_t> ReadTable(const Tensor& table, std::string_view what);

// Reshape: `requested` may hold one -1, resolved from the input's size.
Shape ReshapeShape(const Shape& input, const std::vector<int64_t>& requested);
Shape TransposeShape(const Shape& input, const std::vector<int64_t>& perm);
// ConcatV2 along `axis` (negative counts from the end).
Shape ConcatShape(const std::vector<Shape>& inputs, int64_t axis);
// The shape of each of the num_split outputs of Split.
Shape SplitShape(const Shape& input, int64_t axis, int64_t num_split);
// Slice: size -1 takes the rest of the dimension.
Shape SliceShape(const Shape& input, const std::vector<int64_t>& begin,
                 const std::vector<int64_t>& size);
// Pad/PadV2: `paddings` is the flattened [rank, 2] (before, after) table.
Shape PadShape(const Shape& input, const std::vector<int64_t>& paddings);
Shape TileShape(const Shape& input, const std::vector<int64_t>& multiples);
Shape ExpandDimsShape(const Shape& input, int64_t axis);
// Squeeze: empty `dims` removes every dim of size 1.
Shape SqueezeShape(const Shape& input, const std::vector<int64_t>& dims);
Shape BroadcastToShape(const Shape& input, const Shape& target);
// GatherV2: params[:axis] + indices[batch_dims:] + params[axis+1:].
Shape GatherShape(const Shape& params, const Shape& indices, int64_t axis, int64_t batch_dims);
// UnsortedSegmentSum: [num_segments] + data[rank(segment_ids):]; num_segments -1 = unknown.
Shape SegmentSumShape(const Shape& data, const Shape& segment_ids, int64_t num_segments);
// OneHot: indices' shape with `depth` (-1 = unknown) inserted at `axis` (-1 = last).
Shape OneHotShape(const Shape& indices, int64_t depth, int64_t axis);
// Number of elements of Range(start, limit, delta); throws for delta 0 or a
// delta that points away from limit.
int64_t RangeSize(double start, double limit, double delta);
int64_t RangeSize(int64_t start, int64_t limit, int64_t delta);

// StridedSlice, following TensorFlow: the sparse spec (begin/end/strides with
// masks, one entry per index expression as in x[1:, ..., tf.newaxis, 3]) is
// expanded to one (begin, stride, size) per input dim; the output is those
// sizes with new axes inserted and shrunk axes removed.
struct StridedSliceMasks {
  int64_t begin = 0, end = 0, ellipsis = 0, new_axis = 0, shrink_axis = 0;
};
struct StridedSliceSpec {
  std::vector<int64_t> begin;    // per input dim: first index read
  std::vector<int64_t> strides;  // per input dim (shrunk dims read one element)
  Shape processing_shape;        // per input dim: elements read
  Shape final_shape;             // the output's shape
};
// With values_known false only the lengths of begin/end/strides are used
// (their values are unknown): dims an ellipsis covers are whole, shrunk dims
// are 1, and every other dim is unknown.
StridedSliceSpec ComputeStridedSlice(const Shape& input, const std::vector<int64_t>& begin,
                                     const std::vector<int64_t>& end,
                                     const std::vector<int64_t>& strides,
                                     const StridedSliceMasks& masks, bool values_known = true);

}  // namespace dflow::array

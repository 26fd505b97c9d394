#include "ops/array_shapes.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "graph/status.h"

namespace dflow::array {
namespace {

template <typename... Args>
[[noreturn]] void Invalid(const Args&... args) {
  Fail(Code::kInvalidArgument, args...);
}

// Merges two partial dims (-1 unknown); throws through `clash` when both are known and differ.
template <typename OnClash>
int64_t MergeDim(int64_t a, int64_t b, OnClash&& clash) {
  if (a < 0) return b;
  if (b < 0 || a == b) return a;
  clash();
  return a;
}

}  // namespace

int CanonicalAxis(int64_t axis, int rank, std::string_view what) {
  if (axis < -rank || axis >= rank)
    Invalid(what, " ", axis, " is out of range for a tensor of rank ", rank, " (valid: [", -rank,
            ", ", rank, "))");
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::string IntsString(const std::vector<int64_t>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(values[i]);
  }
  return s + "]";
}

std::string IndexString(int64_t i, const Shape& shape) {
  std::vector<int64_t> index(shape.rank());
  for (int d = shape.rank() - 1; d >= 0; --d) {
    index[d] = i % shape.dim(d);
    i /= shape.dim(d);
  }
  return IntsString(index);
}

int64_t ReadScalarInt(const Tensor& t, std::string_view what) {
  std::vector<int64_t> values = ReadInt64s(t, what);
  if (values.size() != 1) Invalid(what, " must be a single value, got shape ", t.shape().ToString());
  return values[0];
}

std::vector<int64_t> ReadTable(const Tensor& table, std::string_view what) {
  return ReadInt64s(table.Reshaped(Shape{table.NumElements()}), what);
}

Shape ReshapeShape(const Shape& input, const std::vector<int64_t>& requested) {
  CheckShapeSize(Shape(requested));  // names the shape; then known_product cannot overflow
  int unknown_at = -1;
  int64_t known_product = 1;
  for (size_t i = 0; i < requested.size(); ++i) {
    if (requested[i] == -1) {
      if (unknown_at >= 0) Invalid("shape ", IntsString(requested), " has more than one -1");
      unknown_at = static_cast<int>(i);
    } else if (requested[i] < 0) {
      Invalid("shape ", IntsString(requested), " has a negative dimension");
    } else {
      known_product *= requested[i];
    }
  }
  Shape out(requested);
  int64_t n = input.NumElements();  // -1 unless fully known
  if (n < 0) return out;
  if (unknown_at < 0) {
    if (n != known_product)
      Invalid("cannot reshape a tensor of shape ", input.ToString(), " (", n,
              " elements) to shape ", IntsString(requested), " (", known_product, " elements)");
    return out;
  }
  if (known_product == 0)
    Invalid("cannot infer the -1 in shape ", IntsString(requested), " for a tensor of shape ",
            input.ToString(), ": the other dimensions have zero elements");
  if (n % known_product != 0)
    Invalid("cannot reshape a tensor of shape ", input.ToString(), " (", n, " elements) to shape ",
            IntsString(requested), ": ", n, " is not a multiple of ", known_product);
  out.set_dim(unknown_at, n / known_product);
  return out;
}

Shape TransposeShape(const Shape& input, const std::vector<int64_t>& perm) {
  int rank = input.rank();
  if (static_cast<int>(perm.size()) != rank)
    Invalid("perm ", IntsString(perm), " has ", perm.size(), " entries but the input ",
            input.ToString(), " has rank ", rank);
  std::vector<bool> seen(rank, false);
  Shape out = input;
  for (int i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]])
      Invalid("perm ", IntsString(perm), " is not a permutation of 0..", rank - 1);
    seen[perm[i]] = true;
    out.set_dim(i, input.dim(static_cast<int>(perm[i])));
  }
  return out;
}

Shape ConcatShape(const std::vector<Shape>& inputs, int64_t axis) {
  const Shape* first = nullptr;
  size_t first_index = 0;
  for (size_t i = 0; i < inputs.size() && !first; ++i)
    if (!inputs[i].unknown_rank()) first = &inputs[i], first_index = i;
  if (!first) return Shape::Unknown();
  if (first->rank() == 0) Invalid("cannot concatenate scalars (input ", first_index, " is a scalar)");
  int a = CanonicalAxis(axis, first->rank());
  Shape out = *first;
  out.set_dim(a, 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& s = inputs[i];
    if (s.unknown_rank()) {
      out.set_dim(a, -1);
      continue;
    }
    if (s.rank() != first->rank())
      Invalid("input ", i, " has shape ", s.ToString(), " but input ", first_index, " has shape ",
              first->ToString(), ": all inputs must have the same rank");
    for (int d = 0; d < s.rank(); ++d) {
      if (d == a) {
        out.set_dim(d, out.dim(d) < 0 || s.dim(d) < 0
                           ? -1
                           : CheckedAdd(out.dim(d), s.dim(d), "the concatenated dimension"));
        continue;
      }
      out.set_dim(d, MergeDim(out.dim(d), s.dim(d), [&] {
        Invalid("input ", i, " has shape ", s.ToString(), " but input ", first_index, " has shape ",
                first->ToString(), ": they differ in dimension ", d, " (concatenating along axis ",
                a, ")");
      }));
    }
  }
  return out;
}

Shape SplitShape(const Shape& input, int64_t axis, int64_t num_split) {
  if (num_split < 1) Invalid("num_split must be at least 1, got ", num_split);
  int a = CanonicalAxis(axis, input.rank());
  Shape out = input;
  int64_t dim = input.dim(a);
  if (dim >= 0 && dim % num_split != 0)
    Invalid("dimension ", a, " of shape ", input.ToString(), " (size ", dim,
            ") is not divisible by num_split ", num_split);
  out.set_dim(a, dim < 0 ? -1 : dim / num_split);
  return out;
}

Shape SliceShape(const Shape& input, const std::vector<int64_t>& begin,
                 const std::vector<int64_t>& size) {
  int rank = input.rank();
  if (static_cast<int>(begin.size()) != rank || static_cast<int>(size.size()) != rank)
    Invalid("begin ", IntsString(begin), " and size ", IntsString(size),
            " must have one entry per dimension of the input ", input.ToString());
  Shape out = input;
  for (int d = 0; d < rank; ++d) {
    int64_t b = begin[d], s = size[d], dim = input.dim(d);
    if (b < 0) Invalid("begin[", d, "] = ", b, " is negative");
    if (s < -1) Invalid("size[", d, "] = ", s, " is negative (only -1, 'to the end', is allowed)");
    if (dim < 0) {
      out.set_dim(d, s);  // s or -1: unknown either way
      continue;
    }
    int64_t taken = s == -1 ? dim - b : s;
    if (b > dim || taken > dim - b)  // not b + taken: that may overflow
      Invalid("slice begin ", IntsString(begin), " size ", IntsString(size),
              " is out of bounds for input shape ", input.ToString(), " in dimension ", d);
    out.set_dim(d, taken);
  }
  return out;
}

Shape PadShape(const Shape& input, const std::vector<int64_t>& paddings) {
  int rank = input.rank();
  if (static_cast<int>(paddings.size()) != 2 * rank)
    Invalid("paddings must be a [", rank, ", 2] table for an input of shape ", input.ToString(),
            ", got ", paddings.size(), " values");
  Shape out = input;
  for (int d = 0; d < rank; ++d) {
    int64_t before = paddings[2 * d], after = paddings[2 * d + 1];
    if (before < 0 || after < 0)
      Invalid("paddings must be non-negative, got [", before, ", ", after, "] for dimension ", d);
    if (input.dim(d) >= 0)
      out.set_dim(d, CheckedAdd(CheckedAdd(input.dim(d), before, "a padded dimension"), after,
                                "a padded dimension"));
  }
  return out;
}

Shape TileShape(const Shape& input, const std::vector<int64_t>& multiples) {
  if (static_cast<int>(multiples.size()) != input.rank())
    Invalid("multiples ", IntsString(multiples), " must have one entry per dimension of the input ",
            input.ToString());
  Shape out = input;
  for (int d = 0; d < input.rank(); ++d) {
    if (multiples[d] < 0) Invalid("multiples ", IntsString(multiples), " has a negative entry");
    if (input.dim(d) >= 0)
      out.set_dim(d, CheckedMul(input.dim(d), multiples[d], "a dimension of the tiled shape"));
  }
  return out;
}

Shape ExpandDimsShape(const Shape& input, int64_t axis) {
  int rank = input.rank();
  if (axis < -rank - 1 || axis > rank)
    Invalid("axis ", axis, " is out of range for ExpandDims of a tensor of rank ", rank,
            " (valid: [", -rank - 1, ", ", rank, "])");
  int a = static_cast<int>(axis < 0 ? axis + rank + 1 : axis);
  std::vector<int64_t> dims = input.dims();
  dims.insert(dims.begin() + a, 1);
  return Shape(dims);
}

Shape SqueezeShape(const Shape& input, const std::vector<int64_t>& dims) {
  int rank = input.rank();
  std::vector<bool> remove(rank, false);
  if (dims.empty()) {
    for (int d = 0; d < rank; ++d) {
      if (input.dim(d) < 0) return Shape::Unknown();  // might or might not be 1
      remove[d] = input.dim(d) == 1;
    }
  }
  for (int64_t listed : dims) {
    int d = CanonicalAxis(listed, rank, "squeeze dim");
    if (input.dim(d) >= 0 && input.dim(d) != 1)
      Invalid("cannot squeeze dimension ", d, " of shape ", input.ToString(), ": its size is ",
              input.dim(d), ", not 1");
    remove[d] = true;
  }
  Shape out;
  for (int d = 0; d < rank; ++d)
    if (!remove[d]) out.AddDim(input.dim(d));
  return out;
}

Shape BroadcastToShape(const Shape& input, const Shape& target) {
  auto fail = [&] {
    Invalid("cannot broadcast a tensor of shape ", input.ToString(), " to shape ",
            target.ToString());
  };
  if (input.rank() > target.rank()) fail();
  Shape out = target;
  int offset = target.rank() - input.rank();
  for (int d = 0; d < input.rank(); ++d) {
    int64_t in = input.dim(d), t = target.dim(d + offset);
    if (in == 1) continue;
    if (in < 0) continue;  // could be 1 or t
    if (t < 0) out.set_dim(d + offset, in);
    else if (t != in) fail();
  }
  return out;
}

Shape GatherShape(const Shape& params, const Shape& indices, int64_t axis, int64_t batch_dims) {
  if (batch_dims < 0) batch_dims += indices.rank();
  if (batch_dims < 0 || batch_dims > indices.rank())
    Invalid("batch_dims is out of range for indices of shape ", indices.ToString());
  int a = CanonicalAxis(axis, params.rank());
  if (a < batch_dims) Invalid("axis ", a, " must not be less than batch_dims ", batch_dims);
  for (int d = 0; d < batch_dims; ++d)
    MergeDim(params.dim(d), indices.dim(d), [&] {
      Invalid("params ", params.ToString(), " and indices ", indices.ToString(),
              " differ in batch dimension ", d);
    });
  std::vector<int64_t> dims(params.dims().begin(), params.dims().begin() + a);
  for (int d = 0; d < batch_dims; ++d)  // a batch dim known on one side only
    if (dims[d] < 0) dims[d] = indices.dim(d);
  dims.insert(dims.end(), indices.dims().begin() + batch_dims, indices.dims().end());
  dims.insert(dims.end(), params.dims().begin() + a + 1, params.dims().end());
  return Shape(dims);
}

Shape SegmentSumShape(const Shape& data, const Shape& segment_ids, int64_t num_segments) {
  int k = segment_ids.rank();
  if (k > data.rank())
    Invalid("segment_ids shape ", segment_ids.ToString(), " must be a prefix of data shape ",
            data.ToString());
  for (int d = 0; d < k; ++d)
    MergeDim(data.dim(d), segment_ids.dim(d), [&] {
      Invalid("segment_ids shape ", segment_ids.ToString(), " must be a prefix of data shape ",
              data.ToString());
    });
  std::vector<int64_t> dims{num_segments};
  dims.insert(dims.end(), data.dims().begin() + k, data.dims().end());
  return Shape(dims);
}

Shape OneHotShape(const Shape& indices, int64_t depth, int64_t axis) {
  int rank = indices.rank();
  if (axis < -1 || axis > rank)
    Invalid("axis ", axis, " is out of range for indices of rank ", rank, " (valid: [-1, ", rank,
            "])");
  if (depth < -1) Invalid("depth must be non-negative, got ", depth);
  std::vector<int64_t> dims = indices.dims();
  dims.insert(dims.begin() + (axis == -1 ? rank : axis), depth);
  return Shape(dims);
}

namespace {

template <typename T>
void CheckRange(T start, T limit, T delta) {
  if (delta == 0) Invalid("delta must be non-zero (start ", start, ", limit ", limit, ")");
  if (delta > 0 && start > limit)
    Invalid("start ", start, " must be <= limit ", limit, " when delta ", delta, " is positive");
  if (delta < 0 && start < limit)
    Invalid("start ", start, " must be >= limit ", limit, " when delta ", delta, " is negative");
}

}  // namespace

int64_t RangeSize(double start, double limit, double delta) {
  CheckRange(start, limit, delta);
  double n = std::ceil(std::abs((limit - start) / delta));
  if (!(n < 9.0e18)) Invalid("Range from ", start, " to ", limit, " by ", delta, " is too large");
  return static_cast<int64_t>(n);
}

int64_t RangeSize(int64_t start, int64_t limit, int64_t delta) {
  CheckRange(start, limit, delta);
  // (|limit - start| + |delta| - 1) / |delta| in unsigned arithmetic: no overflow.
  uint64_t span = delta > 0 ? uint64_t(limit) - uint64_t(start) : uint64_t(start) - uint64_t(limit);
  uint64_t step = delta > 0 ? uint64_t(delta) : uint64_t(0) - uint64_t(delta);
  return static_cast<int64_t>(span / step + (span % step != 0));
}


namespace {

constexpr int kNewAxis = -1, kShrinkAxis = -2;

bool Bit(int64_t mask, int i) { return (mask >> i) & 1; }

// The sparse spec expanded to one entry per input dim (TensorFlow's "dense spec").
struct DenseSpec {
  std::vector<int64_t> begin, end, strides;
  std::vector<bool> begin_masked, end_masked, shrink, from_ellipsis;
  std::vector<int> final_dims;  // per output dim: an input dim, kNewAxis or kShrinkAxis
};

DenseSpec ExpandSparseSpec(int rank, const std::vector<int64_t>& begin,
                           const std::vector<int64_t>& end, const std::vector<int64_t>& strides,
                           const StridedSliceMasks& masks) {
  int n = static_cast<int>(begin.size());
  int64_t ellipsis = masks.ellipsis & ((int64_t{1} << n) - 1);
  if (std::popcount(static_cast<uint64_t>(ellipsis)) > 1)
    Invalid("only one ellipsis is allowed in a slice (ellipsis_mask=", masks.ellipsis, ")");
  // New axes after the ellipsis do not consume input dims: the ellipsis spans more.
  int new_axes_after_ellipsis = 0;
  bool seen = false;
  for (int i = 0; i < n; ++i) {
    if (seen && Bit(masks.new_axis, i)) ++new_axes_after_ellipsis;
    if (Bit(ellipsis, i)) seen = true;
  }
  int sparse_n = n;
  if (!seen) ellipsis |= int64_t{1} << sparse_n++;  // an implicit trailing ellipsis
  DenseSpec dense{std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 0),
                  std::vector<int64_t>(rank, 1), std::vector<bool>(rank, false),
                  std::vector<bool>(rank, false), std::vector<bool>(rank, false),
                  std::vector<bool>(rank, false), {}};
  int full = 0;
  for (int i = 0; i < sparse_n; ++i) {
    if (Bit(ellipsis, i)) {
      int next = std::min(rank - (sparse_n - i) + 1 + new_axes_after_ellipsis, rank);
      for (; full < next; ++full) {
        dense.begin_masked[full] = dense.end_masked[full] = dense.from_ellipsis[full] = true;
        dense.final_dims.push_back(full);
      }
    } else if (Bit(masks.new_axis, i)) {
      dense.final_dims.push_back(kNewAxis);
    } else {
      if (full == rank)
        Invalid("the slice has more indices (", n, ") than the input has dimensions (", rank, ")");
      dense.begin[full] = begin[i];
      dense.end[full] = end[i];
      dense.strides[full] = strides[i];
      dense.begin_masked[full] = Bit(masks.begin, i);
      dense.end_masked[full] = Bit(masks.end, i);
      dense.shrink[full] = Bit(masks.shrink_axis, i);
      dense.final_dims.push_back(dense.shrink[full] ? kShrinkAxis : full);
      ++full;
    }
  }
  return dense;
}

// Elements read by begin:end:stride (python semantics: begin and end clamped).
int64_t SliceLength(int64_t b, int64_t e, int64_t stride) {
  int64_t interval = e - b;
  if (interval == 0 || (interval < 0) != (stride < 0)) return 0;
  return interval / stride + (interval % stride != 0);
}

}  // namespace

StridedSliceSpec ComputeStridedSlice(const Shape& input, const std::vector<int64_t>& begin,
                                     const std::vector<int64_t>& end,
                                     const std::vector<int64_t>& strides,
                                     const StridedSliceMasks& masks, bool values_known) {
  if (begin.size() != end.size() || begin.size() != strides.size())
    Invalid("begin, end and strides must have the same length, got ", begin.size(), ", ",
            end.size(), " and ", strides.size());
  if (begin.size() > 62) Invalid("a slice may have at most 62 indices, got ", begin.size());
  int rank = input.rank();
  DenseSpec dense = ExpandSparseSpec(rank, begin, end, strides, masks);
  StridedSliceSpec spec{std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 1), Shape(), Shape()};
  for (int d = 0; d < rank; ++d) {
    int64_t dim = input.dim(d), stride = dense.strides[d];
    if (values_known && stride == 0) Invalid("strides ", IntsString(strides), " has a zero stride");
    if (dense.shrink[d]) {
      // x[i]: one element, whatever the stride (numpy semantics).
      int64_t b = dense.begin[d], x = b < 0 && dim >= 0 ? b + dim : b;
      if (values_known && dim >= 0 && (x < 0 || x >= dim))
        Invalid("index ", b, " is out of bounds for dimension ", d, " of size ", dim,
                " (input shape ", input.ToString(), ")");
      spec.begin[d] = x;
      spec.processing_shape.AddDim(1);
      continue;
    }
    if ((!values_known && !dense.from_ellipsis[d]) || dim < 0) {
      spec.processing_shape.AddDim(-1);
      continue;
    }
    // Valid positions are [0, dim] going forward and [-1, dim - 1] going backward.
    int64_t lo = stride > 0 ? 0 : -1, hi = stride > 0 ? dim : dim - 1;
    auto canonical = [&](int64_t x, bool masked, bool is_begin) {
      if (masked) return (stride > 0) == is_begin ? lo : hi;
      return std::clamp(x < 0 ? x + dim : x, lo, hi);
    };
    int64_t b = canonical(dense.begin[d], dense.begin_masked[d], true);
    int64_t e = canonical(dense.end[d], dense.end_masked[d], false);
    spec.begin[d] = b;
    spec.strides[d] = stride;
    spec.processing_shape.AddDim(SliceLength(b, e, stride));
  }
  for (int g : dense.final_dims) {
    if (g == kNewAxis) spec.final_shape.AddDim(1);
    else if (g >= 0) spec.final_shape.AddDim(spec.processing_shape.dim(g));
  }
  return spec;
}

}  // namespace dflow::array

// Builders for reductions over axes (Sum, Mean, Max, Min, Prod; TensorFlow's
// `axis` input and keep_dims attr) and for ArgMax/ArgMin over one dimension.
#pragma once

#include <vector>

#include "graph/scope.h"

namespace dflow {

// Which dims of a tensor of `shape` (known rank) the reduction `axes` select;
// negative axes count from the end, repeats are allowed. Throws
// kInvalidArgument naming an axis outside [-rank, rank).
std::vector<bool> ReductionMask(const std::vector<int64_t>& axes, const Shape& shape);

namespace ops {

struct ReduceAttrs {
  bool keep_dims = false;  // keep reduced dims with length 1
};
// `axis` is an int32/int64 scalar or vector; an empty vector reduces nothing.
// Over an empty set: Sum 0, Prod 1, Mean NaN, Max the lowest value (-inf),
// Min the highest (+inf), as TensorFlow does.
Output Sum(const Scope& scope, const Input& input, const Input& axis, ReduceAttrs attrs = {});
Output Mean(const Scope& scope, const Input& input, const Input& axis, ReduceAttrs attrs = {});
Output Max(const Scope& scope, const Input& input, const Input& axis, ReduceAttrs attrs = {});
Output Min(const Scope& scope, const Input& input, const Input& axis, ReduceAttrs attrs = {});
Output Prod(const Scope& scope, const Input& input, const Input& axis, ReduceAttrs attrs = {});

// Sums `input` down to `shape` (an int vector), undoing numpy broadcasting:
// leading dims and dims where `shape` is 1 are summed away.
Output SumToShape(const Scope& scope, const Input& input, const Input& shape);

struct ArgMinMaxAttrs {
  DType output_type = DType::kInt64;  // int32 or int64
};
// Index of the largest (smallest) value along `dimension` (an int scalar);
// ties and NaNs give the first such index.
Output ArgMax(const Scope& scope, const Input& input, const Input& dimension,
              ArgMinMaxAttrs attrs = {});
Output ArgMin(const Scope& scope, const Input& input, const Input& dimension,
              ArgMinMaxAttrs attrs = {});

}  // namespace ops
}  // namespace dflow

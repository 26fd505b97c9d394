// Small helpers shared by the array ops' shape functions and builders
// (ops/array.cc, ops/array_index.cc): reading int inputs that are known while
// building, checking input ranks, and turning builder literals into Consts.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "graph/scope.h"
#include "ops/array_shapes.h"

namespace dflow::array {

// A shape of known rank whose dims are all unknown.
inline Shape UnknownDims(int rank) { return Shape(std::vector<int64_t>(rank, Shape::kUnknownDim)); }

// Fails unless input i is (when its rank is known) of the given rank.
void RequireRank(const InferenceContext& ctx, int i, int rank, std::string_view what);
// Input i's single value when known while building; fails if it has more.
std::optional<int64_t> KnownScalar(const InferenceContext& ctx, int i, std::string_view what);
// The length of vector input i when its shape is known, else -1.
int64_t VectorLength(const InferenceContext& ctx, int i);
// For ops whose int input holds one value per input dim (perm, multiples,
// paddings rows): the input's shape, or unknown dims of the rank implied by
// `length` (the int input's length, -1 unknown) when the input's rank is unknown.
Shape WithRank(const Shape& input, int64_t length);

// A builder input as an Output; a literal keeps its own dtype, or takes `like`.
Output AsOutput(const Scope& scope, const Input& input, DType like = DType::kInvalid);

}  // namespace dflow::array

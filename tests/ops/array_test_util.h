// Helpers for the array op tests: random shapes (with zero-size dims),
// multi-index arithmetic for naive references, and the dtypes that the
// data-movement kernels must all handle.
#pragma once

#include <functional>
#include <random>
#include <set>
#include <vector>

#include "ops/array_shapes.h"
#include "tests/ops/op_test_util.h"

namespace dflow::testing {

inline const std::vector<DType> kMoveTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16,
                                              DType::kInt8,    DType::kUInt8,   DType::kInt32,
                                              DType::kInt64,   DType::kBool};

inline int64_t Uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {  // inclusive
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// Rank in [min_rank, max_rank], dims in [1, max_dim]; with zero_chance, a dim is 0.
inline Shape RandomShape(std::mt19937_64& rng, int min_rank, int max_rank, int64_t max_dim = 4,
                         double zero_chance = 0.08) {
  Shape s;
  int rank = static_cast<int>(Uniform(rng, min_rank, max_rank));
  for (int d = 0; d < rank; ++d)
    s.AddDim(std::bernoulli_distribution(zero_chance)(rng) ? 0 : Uniform(rng, 1, max_dim));
  return s;
}

// Float64 values that are small integers, so every dtype holds them exactly
// (bool: nonzero is true) and casting commutes with moving elements.
inline Tensor Sample(const Shape& shape, uint64_t seed) {
  return RandomTensor(DType::kInt32, shape, seed, -100, 100).CastTo(DType::kFloat64);
}

inline std::vector<int64_t> Unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.rank());
  for (int d = shape.rank() - 1; d >= 0; --d) {
    index[d] = flat % shape.dim(d);
    flat /= shape.dim(d);
  }
  return index;
}

inline int64_t Ravel(const std::vector<int64_t>& index, const Shape& shape) {
  int64_t flat = 0;
  for (int d = 0; d < shape.rank(); ++d) flat = flat * shape.dim(d) + index[d];
  return flat;
}

// The float64 element of x at a multi-index.
inline double At(const Tensor& x, const std::vector<int64_t>& index) {
  return x.data<double>()[Ravel(index, x.shape())];
}

// Shape/axis inputs alternate between Consts (shape inference sees values)
// and fed Placeholders (only the kernel sees them): OpRun::const_inputs.
inline std::set<int> ConstIf(bool as_const, std::set<int> inputs) {
  return as_const ? inputs : std::set<int>{};
}

// A float64 tensor of `shape` whose element at index i is value(i).
inline Tensor Generate(const Shape& shape, const std::function<double(const std::vector<int64_t>&)>& value) {
  Tensor out(DType::kFloat64, shape);
  for (int64_t i = 0; i < out.NumElements(); ++i) out.data<double>()[i] = value(Unravel(i, shape));
  return out;
}

inline Tensor Int32s(const std::vector<int64_t>& values) {
  return Tensor::FromVector(std::vector<int32_t>(values.begin(), values.end()));
}
inline Tensor Int64s(const std::vector<int64_t>& values) { return Tensor::FromVector(values); }

}  // namespace dflow::testing

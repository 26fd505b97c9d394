// Typed node attributes: int, float, bool, string, dtype, shape, tensor, and
// lists of these. Ints are stored as int64 and floats as double; the typed
// getters convert to the narrower C++ type a kernel asks for.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "graph/dtype.h"
#include "graph/shape.h"
#include "graph/tensor.h"

namespace dflow {

enum class AttrType {
  kInt, kFloat, kBool, kString, kDType, kShape, kTensor,
  kIntList, kFloatList, kBoolList, kStringList, kDTypeList, kShapeList, kTensorList,
};

std::string_view AttrTypeName(AttrType type);  // "int", "list(float)", ...

using AttrValue = std::variant<int64_t, double, bool, std::string, DType, Shape, Tensor,
                               std::vector<int64_t>, std::vector<double>, std::vector<bool>,
                               std::vector<std::string>, std::vector<DType>,
                               std::vector<Shape>, std::vector<Tensor>>;

// The variant alternatives are in AttrType order.
inline AttrType TypeOf(const AttrValue& value) { return static_cast<AttrType>(value.index()); }

// Maps a C++ type to the attr type that stores it (int -> kInt, float -> kFloat...).
template <typename T> struct AttrTypeOf;
template <> struct AttrTypeOf<int> { static constexpr AttrType value = AttrType::kInt; using Stored = int64_t; };
template <> struct AttrTypeOf<int64_t> { static constexpr AttrType value = AttrType::kInt; using Stored = int64_t; };
template <> struct AttrTypeOf<float> { static constexpr AttrType value = AttrType::kFloat; using Stored = double; };
template <> struct AttrTypeOf<double> { static constexpr AttrType value = AttrType::kFloat; using Stored = double; };
template <> struct AttrTypeOf<bool> { static constexpr AttrType value = AttrType::kBool; using Stored = bool; };
template <> struct AttrTypeOf<std::string> { static constexpr AttrType value = AttrType::kString; using Stored = std::string; };
template <> struct AttrTypeOf<DType> { static constexpr AttrType value = AttrType::kDType; using Stored = DType; };
template <> struct AttrTypeOf<Shape> { static constexpr AttrType value = AttrType::kShape; using Stored = Shape; };
template <> struct AttrTypeOf<Tensor> { static constexpr AttrType value = AttrType::kTensor; using Stored = Tensor; };
template <> struct AttrTypeOf<std::vector<int>> { static constexpr AttrType value = AttrType::kIntList; using Stored = std::vector<int64_t>; };
template <> struct AttrTypeOf<std::vector<int64_t>> { static constexpr AttrType value = AttrType::kIntList; using Stored = std::vector<int64_t>; };
template <> struct AttrTypeOf<std::vector<float>> { static constexpr AttrType value = AttrType::kFloatList; using Stored = std::vector<double>; };
template <> struct AttrTypeOf<std::vector<double>> { static constexpr AttrType value = AttrType::kFloatList; using Stored = std::vector<double>; };
template <> struct AttrTypeOf<std::vector<bool>> { static constexpr AttrType value = AttrType::kBoolList; using Stored = std::vector<bool>; };
template <> struct AttrTypeOf<std::vector<std::string>> { static constexpr AttrType value = AttrType::kStringList; using Stored = std::vector<std::string>; };
template <> struct AttrTypeOf<std::vector<DType>> { static constexpr AttrType value = AttrType::kDTypeList; using Stored = std::vector<DType>; };
template <> struct AttrTypeOf<std::vector<Shape>> { static constexpr AttrType value = AttrType::kShapeList; using Stored = std::vector<Shape>; };
template <> struct AttrTypeOf<std::vector<Tensor>> { static constexpr AttrType value = AttrType::kTensorList; using Stored = std::vector<Tensor>; };

// Wraps a C++ value as an AttrValue (int -> int64, float -> double, ...).
template <typename T>
AttrValue MakeAttr(const T& value) {
  using Stored = typename AttrTypeOf<T>::Stored;
  if constexpr (std::is_same_v<T, Stored>) return value;
  else if constexpr (std::is_arithmetic_v<T>) return static_cast<Stored>(value);
  else return Stored(value.begin(), value.end());
}

// Reads an attr as T; throws kInvalidArgument naming `name` on a type mismatch.
template <typename T>
T GetAttr(const AttrValue& value, std::string_view name) {
  using Stored = typename AttrTypeOf<T>::Stored;
  const Stored* stored = std::get_if<Stored>(&value);
  if (!stored)
    Fail(Code::kInvalidArgument, "attr '", name, "' is ", AttrTypeName(TypeOf(value)),
         ", not ", AttrTypeName(AttrTypeOf<T>::value));
  if constexpr (std::is_same_v<T, Stored>) return *stored;
  else if constexpr (std::is_arithmetic_v<T>) return static_cast<T>(*stored);
  else return T(stored->begin(), stored->end());
}

using AttrMap = std::map<std::string, AttrValue, std::less<>>;

// A short human-readable rendering, for DOT labels and error messages.
std::string AttrToString(const AttrValue& value);
// Structural equality (tensors compared by value), for CSE and round-trip tests.
bool AttrEquals(const AttrValue& a, const AttrValue& b);

}  // namespace dflow

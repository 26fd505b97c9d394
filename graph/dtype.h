// Element types of tensors, the C++ type behind each, and a dispatcher that
// turns a runtime DType into a compile-time type for kernels.
#pragma once

#include <cstdint>
#include <tuple>
#include <type_traits>
#include <string>
#include <string_view>
#include <vector>

#include "graph/status.h"

namespace dflow {

enum class DType : uint8_t {
  kInvalid = 0,
  kFloat32,
  kFloat64,
  kFloat16,
  kInt8,
  kUInt8,
  kInt32,
  kInt64,
  kBool,
};

// IEEE 754 binary16, stored as its bit pattern. Conversions round to nearest
// even; arithmetic is done by converting to float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float value);
  explicit operator float() const;
  static Half FromBits(uint16_t bits) { Half h; h.bits = bits; return h; }
};

std::string_view DTypeName(DType dtype);            // "float32"
DType DTypeFromName(std::string_view name);         // throws on unknown names
size_t DTypeSize(DType dtype);                      // bytes per element
bool IsFloating(DType dtype);                       // float16/32/64
bool IsInteger(DType dtype);                        // int8/uint8/int32/int64
const std::vector<DType>& AllDTypes();

template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kFloat32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kFloat64; };
template <> struct DTypeOf<Half> { static constexpr DType value = DType::kFloat16; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kInt8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kUInt8; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };
template <typename T> inline constexpr DType kDTypeOf = DTypeOf<T>::value;

// Calls fn.template operator()<T>() for the C++ type T of `dtype`, trying only
// the listed types; any other dtype throws kUnimplemented naming `what`.
//   Dispatch<float, double>(t.dtype(), "Relu", [&]<typename T>() { ... });
template <typename... Ts, typename Fn>
decltype(auto) Dispatch(DType dtype, std::string_view what, Fn&& fn) {
  using R = decltype(fn.template operator()<std::tuple_element_t<0, std::tuple<Ts...>>>());
  if constexpr (std::is_void_v<R>) {
    bool done = ((dtype == kDTypeOf<Ts> ? (fn.template operator()<Ts>(), true) : false) || ...);
    if (!done) Fail(Code::kUnimplemented, what, " does not support dtype ", DTypeName(dtype));
  } else {
    R result{};
    bool done = ((dtype == kDTypeOf<Ts> ? (result = fn.template operator()<Ts>(), true) : false) || ...);
    if (!done) Fail(Code::kUnimplemented, what, " does not support dtype ", DTypeName(dtype));
    return result;
  }
}

}  // namespace dflow

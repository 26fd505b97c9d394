#include "graph/dtype.h"

#include <bit>
#include <cstring>

namespace dflow {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
};

constexpr DTypeInfo kInfo[] = {
    {DType::kFloat32, "float32", 4}, {DType::kFloat64, "float64", 8},
    {DType::kFloat16, "float16", 2}, {DType::kInt8, "int8", 1},
    {DType::kUInt8, "uint8", 1},     {DType::kInt32, "int32", 4},
    {DType::kInt64, "int64", 8},     {DType::kBool, "bool", 1},
};

const DTypeInfo* Find(DType dtype) {
  for (const auto& info : kInfo)
    if (info.dtype == dtype) return &info;
  return nullptr;
}

}  // namespace

// float -> binary16 with round-to-nearest-even; handles subnormals, infinities
// and NaN (which stays a quiet NaN).
Half::Half(float value) {
  uint32_t f = std::bit_cast<uint32_t>(value);
  uint32_t sign = (f >> 16) & 0x8000u;
  uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    bits = static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    return;
  }
  if (abs >= 0x477ff000u) {  // rounds to a value beyond 65504: overflow to inf
    bits = static_cast<uint16_t>(sign | 0x7c00u);
    return;
  }
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    // Scale so the half's subnormal unit (2^-24) becomes one, and round there.
    float magnitude = std::bit_cast<float>(abs) * 16777216.0f;  // * 2^24
    // Round half to even via the FPU: adding 2^23 forces rounding at units.
    float rounded = (magnitude + 8388608.0f) - 8388608.0f;
    bits = static_cast<uint16_t>(sign | static_cast<uint32_t>(rounded));
    return;
  }
  uint32_t mantissa_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mantissa_odd;  // rebias exponent (-112 << 23) and round
  bits = static_cast<uint16_t>(sign | (abs >> 13));
}

Half::operator float() const {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    return sign ? -magnitude : magnitude;
  }
  uint32_t f = exponent == 0x1f ? (sign | 0x7f800000u | (mantissa << 13))
                                : (sign | ((exponent + 112) << 23) | (mantissa << 13));
  return std::bit_cast<float>(f);
}

std::string_view DTypeName(DType dtype) {
  const DTypeInfo* info = Find(dtype);
  return info ? info->name : "invalid";
}

DType DTypeFromName(std::string_view name) {
  for (const auto& info : kInfo)
    if (info.name == name) return info.dtype;
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  if (name == "half") return DType::kFloat16;
  Fail(Code::kInvalidArgument, "unknown dtype '", name,
       "' (expected one of float32, float64, float16, int8, uint8, int32, int64, bool)");
}

size_t DTypeSize(DType dtype) {
  const DTypeInfo* info = Find(dtype);
  if (!info) Fail(Code::kInvalidArgument, "invalid dtype has no size");
  return info->size;
}

bool IsFloating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16;
}

bool IsInteger(DType dtype) {
  return dtype == DType::kInt8 || dtype == DType::kUInt8 || dtype == DType::kInt32 ||
         dtype == DType::kInt64;
}

const std::vector<DType>& AllDTypes() {
  static const std::vector<DType> all = [] {
    std::vector<DType> v;
    for (const auto& info : kInfo) v.push_back(info.dtype);
    return v;
  }();
  return all;
}

}  // namespace dflow

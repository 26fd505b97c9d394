// Attr values in the graph file: ints, floats, bools and strings as JSON
// scalars; a dtype as its name; a shape as a list (-1 unknown, null unknown
// rank); a tensor as {"dtype", "shape", "values"} with values flat in row-major
// order, or, above kMaxListedValues elements, {"dtype", "shape", "hex"} with
// its little-endian bytes in hexadecimal (weights: a quarter of a float's
// decimal text, and exact); lists as JSON arrays. Floats that JSON cannot
// hold are the strings "nan", "inf" and "-inf".
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>

#include "graph/graph_io.h"
#include "graph/json.h"

namespace dflow {
namespace {

using Json = nlohmann::ordered_json;

[[noreturn]] void Mismatch(std::string_view expected, const Json& value) {
  Fail(Code::kInvalidArgument, "expected ", expected, ", got ", DescribeJson(value));
}

Json FloatToJson(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

// The shortest decimal that reads back as the same float32, so a file shows
// 0.1 rather than 0.10000000149011612.
Json Float32ToJson(float value) {
  if (!std::isfinite(value)) return FloatToJson(value);
  double shortest = ShortestDecimal(value);
  return static_cast<float>(shortest) == value ? shortest : static_cast<double>(value);
}

// The same for float16: at most 5 significant digits are ever needed.
Json HalfToJson(Half value) {
  double exact = static_cast<float>(value);
  if (!std::isfinite(exact)) return FloatToJson(exact);
  for (int digits = 1; digits <= 5; ++digits) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*g", digits, exact);
    double shorter = std::strtod(buf, nullptr);
    if (Half(static_cast<float>(shorter)).bits == value.bits) return shorter;
  }
  return exact;
}

double FloatFromJson(const Json& value) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
  }
  Mismatch("a number (or \"nan\", \"inf\", \"-inf\")", value);
}

int64_t IntFromJson(const Json& value, int64_t lo = std::numeric_limits<int64_t>::min(),
                    int64_t hi = std::numeric_limits<int64_t>::max()) {
  if (!value.is_number_integer()) Mismatch("an integer", value);
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(hi))
    Fail(Code::kInvalidArgument, value.get<uint64_t>(), " is out of range [", lo, ", ", hi, "]");
  int64_t v = value.get<int64_t>();
  if (v < lo || v > hi) Fail(Code::kInvalidArgument, v, " is out of range [", lo, ", ", hi, "]");
  return v;
}

Json ShapeToJson(const Shape& shape) {
  if (shape.unknown_rank()) return nullptr;
  return shape.dims();
}

Shape ShapeFromJson(const Json& value) {
  if (value.is_null()) return Shape::Unknown();
  if (!value.is_array()) Mismatch("a shape (a list of dims, -1 unknown, or null)", value);
  std::vector<int64_t> dims;
  for (const Json& dim : value) {
    if (!dim.is_number_integer() || dim.get<int64_t>() < -1 ||
        (dim.is_number_unsigned() && dim.get<uint64_t>() > INT64_MAX))
      Mismatch("a dimension (an integer >= -1)", dim);
    dims.push_back(dim.get<int64_t>());
  }
  return Shape(std::move(dims));
}

DType DTypeFromJson(const Json& value) {
  if (!value.is_string()) Mismatch("a dtype name", value);
  return DTypeFromName(value.get_ref<const std::string&>());
}

static_assert(std::endian::native == std::endian::little, "graph files hold little-endian tensor bytes");

// Tensors with more elements are written as "hex" rather than "values".
constexpr int64_t kMaxListedValues = 64;

std::string HexOf(const Tensor& tensor) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const auto* bytes = static_cast<const uint8_t*>(tensor.raw_data());
  std::string hex(2 * tensor.TotalBytes(), '0');
  for (size_t i = 0; i < tensor.TotalBytes(); ++i) {
    hex[2 * i] = kDigits[bytes[i] >> 4];
    hex[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  return hex;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The tensor "hex" holds: exactly its bytes, two digits each (checked
// before anything is allocated); bools 0 or 1.
Tensor TensorFromHex(DType dtype, const Shape& shape, const Json& value) {
  if (!value.is_string()) Mismatch("\"hex\" as a string of hexadecimal digits", value);
  const std::string& hex = value.get_ref<const std::string&>();
  CheckShapeSize(shape, static_cast<int64_t>(DTypeSize(dtype)));
  const size_t size = static_cast<size_t>(shape.NumElements()) * DTypeSize(dtype);
  if (hex.size() != 2 * size)
    Fail(Code::kInvalidArgument, "\"hex\" has ", hex.size(), " digits; shape ", shape.ToString(), " of ",
         DTypeName(dtype), " needs ", 2 * size, " (two per byte)");
  Tensor tensor(dtype, shape);
  auto* bytes = static_cast<uint8_t*>(tensor.raw_data());
  for (size_t i = 0; i < tensor.TotalBytes(); ++i) {
    const int high = HexDigit(hex[2 * i]), low = HexDigit(hex[2 * i + 1]);
    if (high < 0 || low < 0)
      Fail(Code::kInvalidArgument, "\"hex\" has '", hex[2 * i + (high < 0 ? 0 : 1)], "' at digit ",
           2 * i + (high < 0 ? 0 : 1), ", which is not a hexadecimal digit");
    bytes[i] = static_cast<uint8_t>(high << 4 | low);
    if (dtype == DType::kBool && bytes[i] > 1)
      Fail(Code::kInvalidArgument, "\"hex\": element ", i, " of a bool tensor is ", int{bytes[i]}, ", not 0 or 1");
  }
  return tensor;
}

Json TensorToJson(const Tensor& tensor) {
  if (tensor.NumElements() > kMaxListedValues)
    return Json{{"dtype", std::string(DTypeName(tensor.dtype()))},
                {"shape", tensor.shape().dims()},
                {"hex", HexOf(tensor)}};
  Json values = Json::array();
  Dispatch<float, double, Half, int8_t, uint8_t, int32_t, int64_t, bool>(
      tensor.dtype(), "graph file", [&]<typename T>() {
        for (T v : tensor.flat<T>()) {
          if constexpr (std::is_same_v<T, float>)
            values.push_back(Float32ToJson(v));
          else if constexpr (std::is_same_v<T, Half>)
            values.push_back(HalfToJson(v));
          else if constexpr (std::is_same_v<T, double>)
            values.push_back(FloatToJson(v));
          else if constexpr (std::is_same_v<T, bool>)
            values.push_back(v);
          else
            values.push_back(static_cast<int64_t>(v));
        }
      });
  return Json{{"dtype", std::string(DTypeName(tensor.dtype()))},
              {"shape", tensor.shape().dims()},
              {"values", std::move(values)}};
}

// Fills `tensor` from a flat JSON array, checking each element's kind and range.
template <typename T>
void FillTensor(const Tensor& tensor, const Json& values) {
  T* out = tensor.data<T>();
  for (size_t i = 0; i < values.size(); ++i) {
    try {
      const Json& v = values[i];
      if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_boolean()) Mismatch("true or false", v);
        out[i] = v.get<bool>();
      } else if constexpr (std::is_same_v<T, Half>) {
        out[i] = Half(static_cast<float>(FloatFromJson(v)));
      } else if constexpr (std::is_floating_point_v<T>) {
        out[i] = static_cast<T>(FloatFromJson(v));
      } else {
        out[i] = static_cast<T>(
            IntFromJson(v, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
      }
    } catch (const Error& e) {
      Fail(e.code(), "values[", i, "]: ", e.message());
    }
  }
}

Tensor TensorFromJson(const Json& value) {
  if (!value.is_object()) Mismatch("a tensor {\"dtype\", \"shape\", \"values\" or \"hex\"}", value);
  for (const auto& [key, unused] : value.items())
    if (key != "dtype" && key != "shape" && key != "values" && key != "hex")
      Fail(Code::kInvalidArgument, "unknown tensor field \"", key,
           "\" (a tensor has \"dtype\", \"shape\" and \"values\" or \"hex\")");
  for (const char* key : {"dtype", "shape"})
    if (!value.contains(key)) Fail(Code::kInvalidArgument, "tensor has no \"", key, "\"");
  if (value.contains("values") == value.contains("hex"))
    Fail(Code::kInvalidArgument, "a tensor has either \"values\" or \"hex\", ",
         value.contains("hex") ? "not both" : "and this one has neither");
  DType dtype = DTypeFromJson(value["dtype"]);
  Shape shape = ShapeFromJson(value["shape"]);
  if (!shape.IsFullyDefined())
    Fail(Code::kInvalidArgument, "a tensor's shape must be fully known, got ", shape.ToString());
  if (value.contains("hex")) return TensorFromHex(dtype, shape, value["hex"]);
  const Json& values = value["values"];
  if (!values.is_array()) Mismatch("\"values\" as a flat list", values);
  CheckShapeSize(shape, static_cast<int64_t>(DTypeSize(dtype)));
  int64_t count = shape.NumElements();
  if (count != static_cast<int64_t>(values.size()))
    Fail(Code::kInvalidArgument, values.size(), " values do not fill shape ", shape.ToString(),
         " (", count, " elements)");
  Tensor tensor(dtype, shape);
  Dispatch<float, double, Half, int8_t, uint8_t, int32_t, int64_t, bool>(
      dtype, "graph file", [&]<typename T>() { FillTensor<T>(tensor, values); });
  return tensor;
}

template <typename T, typename Decode>
std::vector<T> ListFromJson(const Json& value, Decode decode) {
  if (!value.is_array()) Mismatch("a list", value);
  std::vector<T> out;
  for (size_t i = 0; i < value.size(); ++i) {
    try {
      out.push_back(decode(value[i]));
    } catch (const Error& e) {
      Fail(e.code(), "[", i, "]: ", e.message());
    }
  }
  return out;
}

Json ToJsonValue(int64_t v) { return v; }
Json ToJsonValue(double v) { return FloatToJson(v); }
Json ToJsonValue(bool v) { return v; }
Json ToJsonValue(const std::string& v) { return v; }
Json ToJsonValue(DType v) { return std::string(DTypeName(v)); }
Json ToJsonValue(const Shape& v) { return ShapeToJson(v); }
Json ToJsonValue(const Tensor& v) { return TensorToJson(v); }
template <typename T>
Json ToJsonValue(const std::vector<T>& values) {
  Json out = Json::array();
  for (const auto& v : values) out.push_back(ToJsonValue(static_cast<T>(v)));
  return out;
}

}  // namespace

std::string DescribeJson(const nlohmann::ordered_json& value) {
  return StrCat(value.type_name(), " ", JsonForMessage(value, 40));
}

nlohmann::ordered_json AttrToJson(const AttrValue& value) {
  return std::visit([](const auto& v) { return ToJsonValue(v); }, value);
}

AttrValue AttrFromJson(const nlohmann::ordered_json& value, AttrType type) {
  auto as_int = [](const Json& v) { return IntFromJson(v); };
  auto as_bool = [](const Json& v) {
    if (!v.is_boolean()) Mismatch("true or false", v);
    return v.get<bool>();
  };
  auto as_string = [](const Json& v) {
    if (!v.is_string()) Mismatch("a string", v);
    return v.get<std::string>();
  };
  switch (type) {
    case AttrType::kInt:
      return as_int(value);
    case AttrType::kFloat:
      return FloatFromJson(value);
    case AttrType::kBool:
      return as_bool(value);
    case AttrType::kString:
      return as_string(value);
    case AttrType::kDType:
      return DTypeFromJson(value);
    case AttrType::kShape:
      return ShapeFromJson(value);
    case AttrType::kTensor:
      return TensorFromJson(value);
    case AttrType::kIntList:
      return ListFromJson<int64_t>(value, as_int);
    case AttrType::kFloatList:
      return ListFromJson<double>(value, FloatFromJson);
    case AttrType::kBoolList:
      return ListFromJson<bool>(value, as_bool);
    case AttrType::kStringList:
      return ListFromJson<std::string>(value, as_string);
    case AttrType::kDTypeList:
      return ListFromJson<DType>(value, DTypeFromJson);
    case AttrType::kShapeList:
      return ListFromJson<Shape>(value, ShapeFromJson);
    case AttrType::kTensorList:
      return ListFromJson<Tensor>(value, TensorFromJson);
  }
  Fail(Code::kInternal, "unknown attr type");
}

}  // namespace dflow

// The JSON header of a safetensors file: encoding it, and checking every
// field of one read from disk before anything is allocated from it.
#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

#include "models/crc32c.h"
#include "graph/json.h"
#include "models/safetensors.h"

namespace dflow {
namespace {

using nlohmann::json;

constexpr std::string_view kMetadataKey = "__metadata__";

struct DTypeEntry {
  DType dtype;
  std::string_view name;
};
constexpr std::array<DTypeEntry, 8> kDTypes = {{
    {DType::kFloat32, "F32"},
    {DType::kFloat64, "F64"},
    {DType::kFloat16, "F16"},
    {DType::kInt8, "I8"},
    {DType::kUInt8, "U8"},
    {DType::kInt32, "I32"},
    {DType::kInt64, "I64"},
    {DType::kBool, "BOOL"},
}};
// Valid safetensors dtypes with no dflow counterpart.
constexpr std::array<std::string_view, 10> kOtherDTypes = {
    "BF16", "I16", "U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3"};

// Throws kDataLoss: "'<source>': malformed safetensors header: <what>".
class HeaderChecker {
 public:
  explicit HeaderChecker(std::string_view source) : source_(source) {}

  template <typename... Args>
  [[noreturn]] void Bad(const Args&... what) const {
    Fail(Code::kDataLoss, "'", source_, "': malformed safetensors header: ", what...);
  }

  DType ParseDType(const json& value, const std::string& tensor) const {
    if (!value.is_string()) Bad("tensor '", tensor, "': 'dtype' is not a string");
    std::string name = value.get<std::string>();
    for (const DTypeEntry& entry : kDTypes)
      if (entry.name == name) return entry.dtype;
    if (std::find(kOtherDTypes.begin(), kOtherDTypes.end(), name) != kOtherDTypes.end())
      Fail(Code::kInvalidArgument, "'", source_, "': tensor '", tensor, "' has dtype ", name,
           ", which dflow does not support (F32, F64, F16, I8, U8, I32, I64, BOOL)");
    Bad("tensor '", tensor, "': unknown dtype '", name, "'");
  }

  // A JSON integer >= 0; negative numbers and fractions are rejected.
  uint64_t ParseCount(const json& value, const std::string& tensor, std::string_view field) const {
    if (value.is_number_unsigned()) return value.get<uint64_t>();
    if (value.is_number_integer())
      Bad("tensor '", tensor, "': negative value ", value.get<int64_t>(), " in '", field, "'");
    Bad("tensor '", tensor, "': '", field, "' holds ", JsonForMessage(value), ", not an integer");
  }

  const json& Field(const json& object, std::string_view key, const std::string& tensor) const {
    auto it = object.find(key);
    if (it == object.end()) Bad("tensor '", tensor, "' has no '", key, "'");
    return *it;
  }

  TensorEntry ParseEntry(const std::string& name, const json& value) const {
    if (!value.is_object()) Bad("tensor '", name, "' is not an object");
    TensorEntry entry{name, ParseDType(Field(value, "dtype", name), name), Shape{}, 0, 0, {}};
    const json& shape = Field(value, "shape", name);
    const json& offsets = Field(value, "data_offsets", name);
    if (!shape.is_array()) Bad("tensor '", name, "': 'shape' is not a list");
    for (const json& dim : shape) {
      uint64_t d = ParseCount(dim, name, "shape");
      if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        Bad("tensor '", name, "': shape ", JsonForMessage(shape), " is too large");
      entry.shape.AddDim(static_cast<int64_t>(d));
    }
    try {
      CheckShapeSize(entry.shape, static_cast<int64_t>(DTypeSize(entry.dtype)));
    } catch (const Error& e) {
      Bad("tensor '", name, "': ", e.message());
    }
    uint64_t bytes = static_cast<uint64_t>(entry.shape.NumElements()) * DTypeSize(entry.dtype);
    if (!offsets.is_array() || offsets.size() != 2)
      Bad("tensor '", name, "': 'data_offsets' is not a [begin, end] pair");
    entry.begin = ParseCount(offsets[0], name, "data_offsets");
    entry.end = ParseCount(offsets[1], name, "data_offsets");
    if (entry.end < entry.begin)
      Bad("tensor '", name, "': data_offsets [", entry.begin, ", ", entry.end,
          "] are out of order");
    if (entry.end - entry.begin != bytes)
      Bad("tensor '", name, "': ", SafetensorsDTypeName(entry.dtype), entry.shape.ToString(),
          " needs ", bytes, " bytes but data_offsets [", entry.begin, ", ", entry.end, "] span ",
          entry.end - entry.begin);
    return entry;
  }

  Metadata ParseMetadata(const json& value) const {
    if (!value.is_object()) Bad("'__metadata__' is not an object");
    Metadata metadata;
    for (const auto& [key, v] : value.items()) {
      if (!v.is_string()) Bad("metadata '", key, "' is not a string");
      metadata[key] = v.get<std::string>();
    }
    return metadata;
  }

  // Sorted by offset, tensors must tile [0, data_size) exactly.
  void CheckLayout(std::vector<TensorEntry>& entries, uint64_t data_size) const {
    std::sort(entries.begin(), entries.end(), [](const TensorEntry& a, const TensorEntry& b) {
      return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
    });
    uint64_t expected = 0;
    const std::string* previous = nullptr;
    for (const TensorEntry& entry : entries) {
      if (entry.begin < expected)
        Bad("tensor '", entry.name, "' at bytes [", entry.begin, ", ", entry.end,
            ") overlaps tensor '", *previous, "' ending at ", expected);
      if (entry.begin > expected)
        Bad("a gap of ", entry.begin - expected, " bytes before tensor '", entry.name, "'");
      expected = entry.end;
      previous = &entry.name;
    }
    if (expected > data_size)
      Fail(Code::kDataLoss, "'", source_, "' is truncated: the header describes ", expected,
           " bytes of tensor data, the file holds ", data_size);
    if (expected < data_size) Bad(data_size - expected, " unexpected bytes after the last tensor");
  }

  // Attaches "crc32c:<name>" checksums; dflow's own files must have one per tensor.
  void AttachChecksums(std::vector<TensorEntry>& entries, const Metadata& metadata) const {
    bool ours = metadata.count(std::string(kSafetensorsFormatKey)) > 0;
    size_t attached = 0;
    for (TensorEntry& entry : entries) {
      auto it = metadata.find(StrCat(kChecksumKeyPrefix, entry.name));
      if (it == metadata.end()) {
        if (ours) Bad("tensor '", entry.name, "' has no checksum");
        continue;
      }
      entry.crc32c = ParseHex(it->second, entry.name);
      ++attached;
    }
    for (const auto& [key, value] : metadata)
      if (key.starts_with(kChecksumKeyPrefix)) --attached;
    if (attached != 0) Bad("a checksum names a tensor the file does not have");
  }

 private:
  uint32_t ParseHex(const std::string& text, const std::string& tensor) const {
    uint32_t value = 0;
    if (text.size() != 8) Bad("checksum of '", tensor, "' is '", text, "', not 8 hex digits");
    for (char c : text) {
      int digit = (c >= '0' && c <= '9')   ? c - '0'
                  : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                  : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                           : -1;
      if (digit < 0) Bad("checksum of '", tensor, "' is '", text, "', not 8 hex digits");
      value = value << 4 | static_cast<uint32_t>(digit);
    }
    return value;
  }

  std::string_view source_;
};

std::string Hex8(uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", value);
  return text;
}

}  // namespace

std::string_view SafetensorsDTypeName(DType dtype) {
  for (const DTypeEntry& entry : kDTypes)
    if (entry.dtype == dtype) return entry.name;
  Fail(Code::kUnimplemented, "no safetensors dtype for ", DTypeName(dtype));
}

SafetensorsHeader ParseSafetensorsHeader(std::string_view text, uint64_t data_size,
                                         std::string_view source) {
  HeaderChecker check(source);
  if (text.empty() || text[0] != '{') check.Bad("it does not start with '{'");
  json root;
  try {
    root = ParseJson(text, source);
  } catch (const Error& e) {
    check.Bad(e.message());
  }
  if (!root.is_object()) check.Bad("it is not a JSON object");
  SafetensorsHeader header;
  for (const auto& [key, value] : root.items()) {
    if (key == kMetadataKey)
      header.metadata = check.ParseMetadata(value);
    else
      header.entries.push_back(check.ParseEntry(key, value));
  }
  check.CheckLayout(header.entries, data_size);
  check.AttachChecksums(header.entries, header.metadata);
  return header;
}

std::string EncodeSafetensorsHeader(const std::vector<NamedTensor>& tensors,
                                    const Metadata& metadata) {
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  root[std::string(kMetadataKey)] = nullptr;  // placed first, filled in below
  json meta = json::object();
  for (const auto& [key, value] : metadata) {
    DFLOW_REQUIRE(key != kSafetensorsFormatKey && !key.starts_with(kChecksumKeyPrefix),
                  "safetensors metadata key '", key, "' is reserved for dflow");
    meta[key] = value;
  }
  meta[std::string(kSafetensorsFormatKey)] = kSafetensorsFormat;
  uint64_t offset = 0;
  for (const NamedTensor& t : tensors) {
    DFLOW_REQUIRE(t.tensor.valid(), "safetensors: tensor '", t.name, "' is an empty handle");
    DFLOW_REQUIRE(!t.name.empty() && t.name != kMetadataKey, "safetensors: invalid tensor name '",
                  t.name, "'");
    DFLOW_REQUIRE(!root.contains(t.name), "safetensors: tensor name '", t.name, "' appears twice");
    uint64_t bytes = t.tensor.TotalBytes();
    root[t.name] = {{"dtype", SafetensorsDTypeName(t.tensor.dtype())},
                    {"shape", t.tensor.shape().dims()},
                    {"data_offsets", {offset, offset + bytes}}};
    meta[StrCat(kChecksumKeyPrefix, t.name)] = Hex8(Crc32c(t.tensor.raw_data(), bytes));
    offset += bytes;
  }
  root[std::string(kMetadataKey)] = std::move(meta);
  std::string text = root.dump();
  // Spaces after the JSON make 8 + N a multiple of 8, so every tensor of
  // 8-byte elements starts aligned when the file is memory-mapped.
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  return out + text;
}

}  // namespace dflow

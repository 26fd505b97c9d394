// safetensors files, the format PyTorch and numpy users read checkpoints in:
//   8 bytes      N, the header length, a little-endian uint64
//   N bytes      a JSON object {"<name>": {"dtype": "F32", "shape": [2, 3],
//                "data_offsets": [begin, end]}, ..., "__metadata__": {"k": "v"}},
//                padded with spaces so the data starts 8-byte aligned
//   the rest     the tensors' raw little-endian bytes, packed without gaps;
//                offsets count from the first data byte
// dflow adds to the metadata a CRC-32C of each tensor's bytes
// ("crc32c:<name>": 8 hex digits) and a format tag, and checks them on read.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/file.h"
#include "graph/tensor.h"

namespace dflow {

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// String keys and values, as safetensors requires of "__metadata__".
using Metadata = std::map<std::string, std::string>;

// Metadata keys dflow writes itself; callers may not set them.
inline constexpr std::string_view kSafetensorsFormatKey = "dflow.format";
inline constexpr std::string_view kSafetensorsFormat = "1";
inline constexpr std::string_view kChecksumKeyPrefix = "crc32c:";
// Longer headers are refused before anything is allocated for them.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// One tensor as the header describes it.
struct TensorEntry {
  std::string name;
  DType dtype = DType::kInvalid;
  Shape shape;
  uint64_t begin = 0;  // byte offsets into the data, end exclusive
  uint64_t end = 0;
  std::optional<uint32_t> crc32c;  // absent in files other tools wrote
};

struct SafetensorsHeader {
  std::vector<TensorEntry> entries;  // in data order
  Metadata metadata;                 // everything in "__metadata__", checksums included
};

// "F32" for kFloat32, and so on.
std::string_view SafetensorsDTypeName(DType dtype);

// Checks a header's JSON against `data_size`, the number of bytes after it:
// fields and types, dtypes, dims, offsets (in order, no overlap, no gap,
// end - begin == bytes of dtype x shape, all inside the data), metadata
// strings and checksum entries. Throws kDataLoss naming `source` and the
// problem; kInvalidArgument for a valid dtype dflow lacks (BF16, U16, ...).
SafetensorsHeader ParseSafetensorsHeader(std::string_view json, uint64_t data_size,
                                         std::string_view source);
// The 8-byte length and the padded JSON header for `tensors` laid out in
// order, with `metadata`, the format tag and a checksum per tensor.
std::string EncodeSafetensorsHeader(const std::vector<NamedTensor>& tensors,
                                    const Metadata& metadata);

// Writes a safetensors file durably (WriteFileDurable): a crash leaves the
// old file or the new one, never a mix.
void WriteSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const Metadata& metadata = {});

// Opens a file and validates its header; tensors are read one at a time, so
// a caller can check names, dtypes and shapes before reading any data.
class SafetensorsReader {
 public:
  // Throws kNotFound for a missing file, kDataLoss for a truncated file or
  // a malformed header.
  explicit SafetensorsReader(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const std::vector<TensorEntry>& entries() const { return header_.entries; }
  const Metadata& metadata() const { return header_.metadata; }
  const TensorEntry* Find(std::string_view name) const;  // null when absent

  // Allocates the tensor, reads its bytes and verifies its checksum
  // (kDataLoss naming the tensor on a mismatch).
  Tensor Read(const TensorEntry& entry) const;
  // Every tensor, in data order.
  std::vector<NamedTensor> ReadAll() const;

 private:
  RandomAccessFile file_;
  uint64_t data_start_ = 0;
  SafetensorsHeader header_;
};

}  // namespace dflow

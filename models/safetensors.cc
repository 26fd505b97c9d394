// Reading and writing safetensors files: the file-level checks (length
// prefix, header size, truncation) and the tensor data with its checksums.
#include "models/safetensors.h"

#include <bit>

#include "models/crc32c.h"

namespace dflow {

// The format stores little-endian bytes and dflow copies tensor memory as is.
static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian host");

void WriteSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const Metadata& metadata) {
  std::string header = EncodeSafetensorsHeader(tensors, metadata);
  std::vector<std::string_view> pieces = {header};
  for (const NamedTensor& t : tensors)
    if (t.tensor.TotalBytes() > 0)
      pieces.emplace_back(static_cast<const char*>(t.tensor.raw_data()), t.tensor.TotalBytes());
  WriteFileDurable(path, pieces);
}

SafetensorsReader::SafetensorsReader(const std::string& path) : file_(path) {
  uint64_t size = file_.size();
  if (size < 8)
    Fail(Code::kDataLoss, "'", path, "' is truncated: ", size,
         " bytes, shorter than the 8-byte header length of a safetensors file");
  unsigned char prefix[8];
  file_.ReadAt(0, 8, prefix);
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = header_size << 8 | prefix[i];
  if (header_size > kMaxSafetensorsHeaderBytes)
    Fail(Code::kDataLoss, "'", path, "': safetensors header length ", header_size,
         " exceeds the limit of ", kMaxSafetensorsHeaderBytes, " bytes (corrupt file?)");
  if (header_size > size - 8)
    Fail(Code::kDataLoss, "'", path, "' is truncated: the header is ", header_size,
         " bytes, the file has only ", size - 8, " after the length");
  std::string text(header_size, '\0');
  file_.ReadAt(8, header_size, text.data());
  data_start_ = 8 + header_size;
  header_ = ParseSafetensorsHeader(text, size - data_start_, path);
}

const TensorEntry* SafetensorsReader::Find(std::string_view name) const {
  for (const TensorEntry& entry : header_.entries)
    if (entry.name == name) return &entry;
  return nullptr;
}

Tensor SafetensorsReader::Read(const TensorEntry& entry) const {
  Tensor tensor(entry.dtype, entry.shape);
  size_t bytes = tensor.TotalBytes();
  if (bytes > 0) file_.ReadAt(data_start_ + entry.begin, bytes, tensor.raw_data());
  if (entry.crc32c) {
    uint32_t actual = Crc32c(tensor.raw_data(), bytes);
    if (actual != *entry.crc32c)
      Fail(Code::kDataLoss, "'", path(), "': checksum mismatch in tensor '", entry.name,
           "' (stored crc32c ", StrCat(std::hex, *entry.crc32c), ", data has ",
           StrCat(std::hex, actual), "): the file is corrupt");
  }
  if (entry.dtype == DType::kBool) {
    // A C++ bool must hold 0 or 1; other tools may write any nonzero byte for true.
    auto* raw = static_cast<unsigned char*>(tensor.raw_data());
    for (size_t i = 0; i < bytes; ++i) raw[i] = raw[i] != 0;
  }
  return tensor;
}

std::vector<NamedTensor> SafetensorsReader::ReadAll() const {
  std::vector<NamedTensor> tensors;
  for (const TensorEntry& entry : header_.entries) tensors.push_back({entry.name, Read(entry)});
  return tensors;
}

}  // namespace dflow

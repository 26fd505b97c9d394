// libFuzzer target for a safetensors header (models/safetensors_header.cc):
// the input is a whole file, the 8-byte length, the JSON and the data, and
// the JSON is checked against the bytes after it the way SafetensorsReader
// does. It is accepted or refused with kDataLoss (kInvalidArgument for a valid
// dtype dflow lacks).
// fuzz-sources: models/safetensors_header.cc models/crc32c.cc graph/tensor.cc graph/shape.cc graph/dtype.cc graph/allocator.cc graph/status.cc graph/file.cc graph/json.cc
#include <cstring>

#include "models/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

using namespace dflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t length;
  std::memcpy(&length, data, 8);  // little-endian, as on disk
  length = std::min<uint64_t>(length, size - 8);
  std::string_view json = fuzz::AsText(data + 8, length);
  fuzz::ParsesOrRefuses([&] { ParseSafetensorsHeader(json, size - 8 - length, "fuzz.safetensors"); },
                        {Code::kDataLoss, Code::kInvalidArgument});
  return 0;
}

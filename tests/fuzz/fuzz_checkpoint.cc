// libFuzzer target for reading a checkpoint (models/safetensors.cc): the input
// is a safetensors file, opened with SafetensorsReader and read in full, which
// verifies every tensor's checksum. A bad file is refused with kDataLoss
// (kInvalidArgument for a valid dtype dflow lacks).
// fuzz-sources: models/safetensors.cc models/safetensors_header.cc models/crc32c.cc graph/tensor.cc graph/shape.cc graph/dtype.cc graph/allocator.cc graph/status.cc graph/file.cc graph/json.cc
#include "models/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

using namespace dflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = fuzz::WriteScratchFile("model.safetensors", fuzz::AsText(data, size));
  fuzz::ParsesOrRefuses([&] { SafetensorsReader(path).ReadAll(); },
                        {Code::kDataLoss, Code::kInvalidArgument});
  return 0;
}

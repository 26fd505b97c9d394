// libFuzzer target for COCO instances files (models/data/coco.cc): a bad one
// is refused with kInvalidArgument.
// fuzz-sources: models/data/coco.cc graph/tensor.cc graph/shape.cc graph/dtype.cc graph/allocator.cc graph/status.cc graph/file.cc graph/json.cc
#include "models/data/coco.h"
#include "tests/fuzz/fuzz_util.h"

using namespace dflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(fuzz::AsText(data, size));
  fuzz::ParsesOrRefuses([&] { models::ParseCocoInstances(text, "fuzz.json"); },
                        {Code::kInvalidArgument});
  return 0;
}

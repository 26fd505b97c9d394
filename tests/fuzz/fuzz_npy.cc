// libFuzzer target for .npy decoding (graph/npy.cc): any bytes decode or throw
// kDataLoss (bad or truncated) or kInvalidArgument (valid, but not a dtype or
// layout dflow has).
// fuzz-sources: graph/npy.cc graph/tensor.cc graph/shape.cc graph/dtype.cc graph/allocator.cc graph/status.cc graph/file.cc
#include "graph/npy.h"
#include "tests/fuzz/fuzz_util.h"

using namespace dflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::ParsesOrRefuses([&] { ParseNpy(fuzz::AsText(data, size), "fuzz.npy"); },
                        {Code::kDataLoss, Code::kInvalidArgument});
  return 0;
}

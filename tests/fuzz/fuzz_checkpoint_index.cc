// libFuzzer target for a checkpoint directory's index, checkpoint.json
// (models/checkpoint_index.cc): a malformed one is refused with kDataLoss.
// fuzz-sources: models/checkpoint_index.cc graph/op_def.cc graph/tensor.cc graph/shape.cc graph/dtype.cc graph/allocator.cc graph/status.cc graph/file.cc graph/json.cc
#include "models/checkpoint.h"
#include "tests/fuzz/fuzz_util.h"

using namespace dflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::WriteScratchFile("checkpoints/checkpoint.json", fuzz::AsText(data, size));
  std::string dir = (fuzz::ScratchDir() / "checkpoints").string();
  fuzz::ParsesOrRefuses([&] { ReadCheckpointIndex(dir); }, {Code::kDataLoss});
  return 0;
}

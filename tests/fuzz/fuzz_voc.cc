// libFuzzer target for Pascal VOC annotations (models/data/voc.cc): the input
// is one Annotations/<name>.xml of a dataset folder, read with ReadVocDataset;
// a bad one is refused with kInvalidArgument.
// fuzz-sources: models/data/voc.cc models/data/detection_formats.cc models/data/coco.cc models/data/yolo.cc models/data/image.cc models/data/text_numbers.cc graph/tensor.cc graph/shape.cc graph/dtype.cc graph/allocator.cc graph/status.cc graph/file.cc graph/json.cc
// fuzz-libs: -lpugixml -lstb
#include "models/data/voc.h"
#include "tests/fuzz/fuzz_util.h"

using namespace dflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::WriteScratchFile("voc/Annotations/000001.xml", fuzz::AsText(data, size));
  std::string dir = (fuzz::ScratchDir() / "voc").string();
  fuzz::ParsesOrRefuses([&] { models::ReadVocDataset(dir); }, {Code::kInvalidArgument});
  return 0;
}

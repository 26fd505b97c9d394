// libFuzzer target for COCO results files (models/data/coco.cc, what
// `dflow-detect cocoeval --dt` reads) against a fixed ground truth: a bad
// one is refused with kInvalidArgument.
// fuzz-sources: models/data/coco.cc graph/tensor.cc graph/shape.cc graph/dtype.cc graph/allocator.cc graph/status.cc graph/file.cc graph/json.cc
#include "models/data/coco.h"
#include "tests/fuzz/fuzz_util.h"

using namespace dflow;

namespace {

// Two images and two categories (ids 1 and 3) for the results to name.
const models::DetectionDataset& Truth() {
  static const models::DetectionDataset truth = models::ParseCocoInstances(
      R"({"images": [{"id": 1, "file_name": "a.jpg", "width": 640, "height": 480},
                     {"id": 2, "file_name": "b.jpg", "width": 32, "height": 32}],
          "categories": [{"id": 1, "name": "person"}, {"id": 3, "name": "car"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 20, 30, 40],
                           "area": 1200, "iscrowd": 0}]})",
      "truth.json");
  return truth;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(fuzz::AsText(data, size));
  fuzz::ParsesOrRefuses([&] { models::ParseCocoResults(text, "fuzz.json", Truth()); },
                        {Code::kInvalidArgument});
  return 0;
}

// libFuzzer target for point-annotated datasets (models/data/points_dataset.cc):
// the first byte picks points.json or points.csv, the rest is the file. A bad
// file is refused with kInvalidArgument; a good one names images that do not
// exist, kNotFound (the folder holds one image, a.png, so some inputs pass).
// fuzz-sources: models/data/points_dataset.cc models/data/text_numbers.cc graph/tensor.cc graph/shape.cc graph/dtype.cc graph/allocator.cc graph/status.cc graph/file.cc graph/json.cc
#include <filesystem>

#include "models/data/points_dataset.h"
#include "tests/fuzz/fuzz_util.h"

using namespace dflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::string dir = [] {
    fuzz::WriteScratchFile("points/a.png", "");
    return (fuzz::ScratchDir() / "points").string();
  }();
  bool json = data[0] & 1;
  std::filesystem::remove(dir + (json ? "/points.csv" : "/points.json"));
  fuzz::WriteScratchFile(json ? "points/points.json" : "points/points.csv",
                         fuzz::AsText(data + 1, size - 1));
  fuzz::ParsesOrRefuses([&] { models::ReadPointsDataset(dir); },
                        {Code::kInvalidArgument, Code::kNotFound});
  return 0;
}

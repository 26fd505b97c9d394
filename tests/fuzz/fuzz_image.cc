// libFuzzer target for the image loader (models/data/image.cc): bytes that
// claim to be a PNG, JPEG, BMP, ... decode to uint8 [height, width, channels]
// or are refused with kDataLoss (kInvalidArgument for an image too large to
// load). The first byte picks the channel count, 1-4.
// fuzz-sources: models/data/image.cc graph/tensor.cc graph/shape.cc graph/dtype.cc graph/allocator.cc graph/status.cc graph/file.cc graph/json.cc
// fuzz-libs: -lstb
#include "models/data/image.h"
#include "tests/fuzz/fuzz_util.h"

using namespace dflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  int channels = 1 + data[0] % 4;
  std::string_view bytes = fuzz::AsText(data + 1, size - 1);
  fuzz::ParsesOrRefuses(
      [&] {
        Tensor image = models::DecodeImage(bytes, "fuzz.img", channels);
        if (image.dim(2) != channels) std::abort();
      },
      {Code::kDataLoss, Code::kInvalidArgument});
  return 0;
}

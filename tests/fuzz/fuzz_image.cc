// libFuzzer target for the image loader (models/data/image.cc): bytes that
// claim to be a PNG, JPEG, BMP, ... have their header read (ReadImageInfo)
// and decode to uint8 [height, width, channels] of that size, or are refused
// with kDataLoss (kInvalidArgument for an image too large to load). The first
// byte picks the channel count, 1-4. Images the header says are larger than
// a megapixel are not decoded: within kMaxImagePixels, but filling a gigabyte
// under ASan would leave no time for anything else.
// fuzz-sources: models/data/image.cc graph/tensor.cc graph/shape.cc graph/dtype.cc graph/allocator.cc graph/status.cc graph/file.cc graph/json.cc
// fuzz-libs: -lstb
#include "models/data/image.h"
#include "tests/fuzz/fuzz_util.h"

using namespace dflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  int channels = 1 + data[0] % 4;
  std::string_view bytes = fuzz::AsText(data + 1, size - 1);
  std::string path = fuzz::WriteScratchFile("fuzz.img", bytes);
  models::ImageInfo info;
  bool read = false;
  fuzz::ParsesOrRefuses([&] { info = models::ReadImageInfo(path), read = true; },
                        {Code::kDataLoss, Code::kInvalidArgument});
  if (!read || info.height * info.width > (int64_t{1} << 20)) return 0;
  fuzz::ParsesOrRefuses(
      [&] {
        Tensor image = models::DecodeImage(bytes, path, channels);
        if (image.dim(0) != info.height || image.dim(1) != info.width || image.dim(2) != channels)
          std::abort();
      },
      {Code::kDataLoss, Code::kInvalidArgument});
  return 0;
}

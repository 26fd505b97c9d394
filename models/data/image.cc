// Image decode/encode over stb_image; see image.h.
#include "models/data/image.h"

#include <cstring>
#include <limits>
#include <memory>

#include <stb_image.h>
#include <stb_image_write.h>

#include "graph/file.h"

namespace dflow::models {
namespace {

int ByteLength(std::string_view bytes, const std::string& source) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    Fail(Code::kInvalidArgument, "image '", source, "' is ", bytes.size(),
         " bytes, larger than an image file may be (2 GiB)");
  return static_cast<int>(bytes.size());
}

ImageInfo Info(std::string_view bytes, const std::string& source) {
  int width = 0, height = 0, channels = 0;
  auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  if (!stbi_info_from_memory(data, ByteLength(bytes, source), &width, &height, &channels))
    Fail(Code::kDataLoss, "'", source, "' is not an image that can be decoded (",
         stbi_failure_reason() ? stbi_failure_reason() : "unknown format", ")");
  ImageInfo info{height, width, channels};
  if (height <= 0 || width <= 0 || info.height * info.width > kMaxImagePixels)
    Fail(Code::kDataLoss, "image '", source, "' claims ", width, "x", height,
         " pixels, outside 1 .. ", kMaxImagePixels, " pixels");
  return info;
}

}  // namespace

ImageInfo ReadImageInfo(const std::string& path) { return Info(ReadFileToString(path), path); }

Tensor DecodeImage(std::string_view bytes, const std::string& source, int channels) {
  DFLOW_REQUIRE(channels >= 1 && channels <= 4, "DecodeImage: channels must be 1-4, got ", channels);
  ImageInfo info = Info(bytes, source);
  int width = 0, height = 0, stored = 0;
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
      stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                            ByteLength(bytes, source), &width, &height, &stored, channels),
      stbi_image_free);
  if (!pixels)
    Fail(Code::kDataLoss, "cannot decode image '", source, "': ",
         stbi_failure_reason() ? stbi_failure_reason() : "corrupt data");
  if (width != info.width || height != info.height)
    Fail(Code::kDataLoss, "image '", source, "': header and data disagree on the size");
  Tensor image(DType::kUInt8, Shape{height, width, channels});
  std::memcpy(image.raw_data(), pixels.get(), image.TotalBytes());
  return image;
}

Tensor ReadImage(const std::string& path, int channels) {
  return DecodeImage(ReadFileToString(path), path, channels);
}

void WritePng(const std::string& path, const Tensor& image) {
  DFLOW_REQUIRE(image.dtype() == DType::kUInt8 && image.rank() == 3 && image.dim(2) >= 1 &&
                    image.dim(2) <= 4 && image.NumElements() > 0,
                "WritePng '", path, "': expected a non-empty uint8 [height, width, 1-4] tensor, got ",
                image.SummaryString());
  DFLOW_REQUIRE(image.dim(0) * image.dim(1) <= kMaxImagePixels, "WritePng '", path,
                "': image too large");
  int width = static_cast<int>(image.dim(1)), height = static_cast<int>(image.dim(0));
  int channels = static_cast<int>(image.dim(2));
  std::string png;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), size);
  };
  if (!stbi_write_png_to_func(append, &png, width, height, channels, image.raw_data(),
                              width * channels))
    Fail(Code::kInternal, "WritePng '", path, "': PNG encoding failed");
  WriteFileAtomic(path, png);
}

}  // namespace dflow::models

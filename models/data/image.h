// Image files <-> uint8 tensors [height, width, channels], decoded with
// stb_image (JPEG, PNG, BMP, TGA, GIF, 8-bit PNM) and written as PNG. Every
// failure names the file and what was wrong; nothing is allocated for an
// image before its header has been read and its size checked.
#pragma once

#include <string>
#include <string_view>

#include "graph/tensor.h"

namespace dflow::models {

// The largest image accepted, in pixels: a header claiming more is refused
// before any pixel memory is allocated.
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 28;  // 268M, e.g. 16384 x 16384

struct ImageInfo {
  int64_t height = 0, width = 0, channels = 0;  // channels as stored in the file
};

// Reads just the header. Throws kNotFound (cannot read) or kDataLoss (not
// an image stb can decode), naming `path`.
ImageInfo ReadImageInfo(const std::string& path);

// Decodes the file to uint8 [height, width, channels]; `channels` 1-4
// converts (3 = RGB, 1 = grey).
Tensor ReadImage(const std::string& path, int channels = 3);
// The same from bytes in memory; `source` names them in errors.
Tensor DecodeImage(std::string_view bytes, const std::string& source, int channels = 3);

// Writes uint8 [height, width, channels] (channels 1-4) as PNG, atomically.
void WritePng(const std::string& path, const Tensor& image);

}  // namespace dflow::models

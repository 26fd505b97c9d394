// Image decode/encode over stb_image; see image.h.
#include "models/data/image.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>

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

// A file's format by its first bytes (TGA has none: nullptr, like an
// unknown file), so that errors can name the format the file claims to be.
const char* SniffFormat(std::string_view b) {
  auto starts = [&b](std::string_view magic) { return b.substr(0, magic.size()) == magic; };
  if (starts("\x89PNG\r\n\x1a\n")) return "PNG";
  if (starts("\xff\xd8\xff")) return "JPEG";
  if (starts("GIF8")) return "GIF";
  if (starts("BM")) return "BMP";
  if (starts("P5") || starts("P6")) return "PNM";
  return nullptr;
}

uint32_t BigEndian(std::string_view b, size_t at, size_t bytes) {
  uint32_t value = 0;
  for (size_t i = 0; i < bytes; ++i) value = (value << 8) | static_cast<uint8_t>(b[at + i]);
  return value;
}

struct Dims {
  int64_t width = 0, height = 0;
};

// A PNG's size from its IHDR chunk, which must come first.
std::optional<Dims> PngSize(std::string_view b) {
  if (b.size() < 24 || b.substr(12, 4) != "IHDR") return std::nullopt;
  return Dims{BigEndian(b, 16, 4), BigEndian(b, 20, 4)};
}

// A JPEG's size from its frame header (SOFn), found by walking the marker
// segments that precede it; nullopt when the file ends (or the scan starts)
// before it.
std::optional<Dims> JpegSize(std::string_view b) {
  size_t i = 2;
  while (i + 4 <= b.size()) {
    const auto marker = static_cast<uint8_t>(b[i + 1]);
    if (static_cast<uint8_t>(b[i]) != 0xff || marker == 0xda || marker == 0xd9) return std::nullopt;
    if (marker == 0xff) {  // fill byte
      ++i;
      continue;
    }
    const bool frame = marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc;
    if (frame) {
      if (i + 9 > b.size()) return std::nullopt;
      return Dims{BigEndian(b, i + 7, 2), BigEndian(b, i + 5, 2)};
    }
    i += 2 + BigEndian(b, i + 2, 2);
  }
  return std::nullopt;
}

// stb_image (Debian 12's copy) builds each Huffman table of a JPEG's DHT
// segments into 257 entries without checking that the table's 16 code
// counts add up to at most 256, so a corrupt table writes past the array
// (found by fuzzing). Every DHT segment, before and between the scans, is
// checked here first; a truncated file is left to the decoder to refuse.
void CheckJpegHuffmanTables(std::string_view b, const std::string& source) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(b[k]); };
  auto corrupt = [&](auto... why) {
    Fail(Code::kDataLoss, "image '", source, "' is a corrupt JPEG file: ", why...);
  };
  size_t i = 2;
  while (i + 4 <= b.size()) {
    const uint8_t marker = byte(i + 1);
    if (byte(i) != 0xff || marker == 0xd9) return;  // not a marker: left to the decoder; EOI
    if (marker == 0xff || marker == 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {  // fill, TEM, RSTn
      i += marker == 0xff ? 1 : 2;
      continue;
    }
    const size_t end = i + 2 + static_cast<size_t>(BigEndian(b, i + 2, 2));
    if (end > b.size()) return;
    for (size_t p = i + 4; marker == 0xc4 && p < end;) {  // DHT: tables of class/id, 16 counts, values
      if (p + 17 > end) corrupt("a Huffman table's 16 code counts run past its segment");
      size_t codes = 0;
      for (size_t k = p + 1; k < p + 17; ++k) codes += byte(k);
      if (codes > 256) corrupt("a Huffman table declares ", codes, " codes (at most 256)");
      p += 17 + codes;
      if (p > end) corrupt("a Huffman table's ", codes, " values run past its segment");
    }
    i = end;
    if (marker == 0xda)  // a scan: its entropy-coded data runs to the next marker
      while (i + 1 < b.size() &&
             !(byte(i) == 0xff && byte(i + 1) != 0 && !(byte(i + 1) >= 0xd0 && byte(i + 1) <= 0xd7)))
        ++i;
  }
}

// A binary PNM's header (P5 grey, P6 RGB) read the way stb_image reads it:
// whitespace and '#' comments before each of width, height and the largest
// sample value, then one character, then the samples. nullopt when a field
// is missing.
struct PnmHeader {
  int64_t max_value = 0;
  size_t samples_at = 0;
};
std::optional<PnmHeader> ReadPnmHeader(std::string_view b) {
  size_t i = 2;
  auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  auto field = [&](int64_t& value) {
    for (;;) {
      while (i < b.size() && space(b[i])) ++i;
      if (i >= b.size() || b[i] != '#') break;
      while (i < b.size() && b[i] != '\n' && b[i] != '\r') ++i;
    }
    size_t start = i;
    for (value = 0; i < b.size() && b[i] >= '0' && b[i] <= '9'; ++i)
      value = std::min<int64_t>(value * 10 + (b[i] - '0'), int64_t{1} << 40);
    return i > start;
  };
  int64_t width, height;
  PnmHeader h;
  if (!field(width) || !field(height) || !field(h.max_value)) return std::nullopt;
  h.samples_at = std::min(i + 1, b.size());
  return h;
}

// stb_image (Debian 12's copy) trusts a PNM header: it decodes a file shorter
// than its header says from whatever its buffer held, and converting 16-bit
// samples (largest value over 255) to another channel count it reads past
// its buffer. So a PNM must hold all its samples, 8 bits each.
void CheckPnm(std::string_view bytes, const std::string& source, const ImageInfo& info) {
  std::optional<PnmHeader> h = ReadPnmHeader(bytes);
  if (!h) Fail(Code::kDataLoss, "image '", source, "' is a PNM file whose header cannot be read");
  if (h->max_value > 255)
    Fail(Code::kInvalidArgument, "image '", source, "' is a 16-bit PNM file (largest sample value ",
         h->max_value, "); only 8-bit PNM files (at most 255) can be loaded");
  const int64_t samples = info.height * info.width * info.channels;
  const auto present = static_cast<int64_t>(bytes.size() - h->samples_at);
  if (present < samples)
    Fail(Code::kDataLoss, "image '", source, "' is a truncated PNM file: its header declares ", info.width,
         "x", info.height, " pixels, ", samples, " bytes of samples, and ", present, " follow it");
}

// stb_image refuses a header it finds too large or empty with "unknown
// image type" (it then tries every other format), so the size a PNG or
// JPEG declares is checked here first, with a message that says so.
void CheckDeclaredSize(const Dims& d, const std::string& source, const char* format) {
  if (d.width <= 0 || d.height <= 0)
    Fail(Code::kDataLoss, "image '", source, "' is empty: its ", format, " header declares ", d.width, "x",
         d.height, " pixels");
  if (d.width > kMaxImagePixels || d.height > kMaxImagePixels || d.width * d.height > kMaxImagePixels)
    Fail(Code::kDataLoss, "image '", source, "' is too large: its ", format, " header declares ", d.width,
         "x", d.height, " pixels, more than the ", kMaxImagePixels, " accepted");
}

ImageInfo Info(std::string_view bytes, const std::string& source) {
  if (bytes.empty()) Fail(Code::kDataLoss, "image '", source, "' is empty (0 bytes)");
  const char* format = SniffFormat(bytes);
  std::optional<Dims> declared;
  const std::string_view format_name = format ? format : "";
  if (format_name == "PNG") declared = PngSize(bytes);
  if (format_name == "JPEG") {
    CheckJpegHuffmanTables(bytes, source);  // before stb_image reads any of them
    declared = JpegSize(bytes);
  }
  if (declared) CheckDeclaredSize(*declared, source, format);
  int width = 0, height = 0, channels = 0;
  auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  if (!stbi_info_from_memory(data, ByteLength(bytes, source), &width, &height, &channels)) {
    // stb's reason is from the last format it tried: useless once the format is known.
    if (format)
      Fail(Code::kDataLoss, "image '", source, "' is a ", format, " file whose header cannot be read (",
           declared ? "corrupt" : "truncated or corrupt", ", ", bytes.size(), " bytes)");
    Fail(Code::kDataLoss, "'", source, "' is not an image that can be decoded: not a JPEG, PNG, BMP, GIF, ",
         "TGA or PNM file");
  }
  CheckDeclaredSize({width, height}, source, format ? format : "image");
  if (format_name == "PNM") CheckPnm(bytes, source, {height, width, channels});
  return {height, width, channels};
}

// Why stb_image could not decode a file whose header it read: its terse
// reason ("outofdata", "bad huffman code") with the format it decoded as.
[[noreturn]] void FailDecode(std::string_view bytes, const std::string& source) {
  const char* format = SniffFormat(bytes);
  const char* reason = stbi_failure_reason();
  Fail(Code::kDataLoss, "cannot decode image '", source, "'", format ? StrCat(" as ", format) : std::string(),
       ": the file is truncated or corrupt (stb_image: ", reason ? reason : "no reason given", ", ",
       bytes.size(), " bytes)");
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
  if (!pixels) FailDecode(bytes, source);
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

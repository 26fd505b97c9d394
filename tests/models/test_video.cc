// models/data/video.h: videos written and read back through FFmpeg in the
// common containers, and damaged, truncated and foreign files named.
#include <cmath>
#include <filesystem>

#include <catch2/catch.hpp>

#include "models/data/video.h"
#include "tests/models/checkpoint_test_util.h"

using namespace dflow;
using namespace dflow::models;
using dflow::testing::ExpectError;
using dflow::testing::ReadBytes;
using dflow::testing::ScratchDir;
using dflow::testing::WriteBytes;

namespace {

constexpr int64_t kHeight = 48, kWidth = 64;

// Frame `i`: a grey background with a white square that moves right by 4
// pixels a frame, so frames differ and their order shows.
Tensor MovingSquare(int64_t i, int64_t height = kHeight, int64_t width = kWidth) {
  Tensor frame(DType::kUInt8, {height, width, 3});
  uint8_t* p = frame.data<uint8_t>();
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x) {
      const bool square = y >= 16 && y < 32 && x >= 4 * i && x < 4 * i + 16;
      for (int c = 0; c < 3; ++c) p[(y * width + x) * 3 + c] = square ? 240 : static_cast<uint8_t>(40 + 30 * c);
    }
  return frame;
}

VideoWriterOptions Options(double fps, const std::string& codec = "") {
  VideoWriterOptions options;
  options.fps = fps;
  options.codec = codec;
  return options;
}

double MeanAbsDifference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double sum = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i)
    sum += std::abs(int{a.data<uint8_t>()[i]} - int{b.data<uint8_t>()[i]});
  return sum / static_cast<double>(a.NumElements());
}

void WriteVideo(const std::string& path, int64_t frames, const VideoWriterOptions& options = Options(10)) {
  VideoWriter writer(path, kHeight, kWidth, options);
  for (int64_t i = 0; i < frames; ++i) writer.Write(MovingSquare(i));
  writer.Close();
  CHECK(writer.frames_written() == frames);
}

std::vector<Tensor> ReadAll(const std::string& path) {
  VideoReader reader(path);
  std::vector<Tensor> frames;
  while (std::optional<Tensor> frame = reader.Next()) frames.push_back(std::move(*frame));
  return frames;
}

}  // namespace

TEST_CASE("videos round-trip through mp4, mkv, avi and webm", "[video]") {
  ScratchDir dir("video");
  const auto [name, codec] = GENERATE(table<std::string, std::string>(
      {{"clip.mp4", "h264"}, {"clip.mkv", "h264"}, {"clip.avi", "mjpeg"}, {"clip.mov", "h264"},
       {"clip.webm", "vp9"}}));
  CAPTURE(name);
  const std::string path = dir / name;
  WriteVideo(path, 12);
  REQUIRE(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(path + ".partial"));

  VideoReader reader(path);
  CHECK(reader.info().width == kWidth);
  CHECK(reader.info().height == kHeight);
  CHECK(reader.info().fps == Approx(10.0));
  CHECK(reader.info().codec == codec);
  std::vector<Tensor> frames;
  while (std::optional<Tensor> frame = reader.Next()) frames.push_back(std::move(*frame));
  REQUIRE(frames.size() == 12);
  CHECK(reader.frames_read() == 12);
  // Lossy codecs: each frame close to the one written, and far from its neighbour.
  for (int64_t i = 0; i < 12; ++i) {
    CAPTURE(i);
    CHECK(MeanAbsDifference(frames[i], MovingSquare(i)) < 4.0);
    if (i > 0) CHECK(MeanAbsDifference(frames[i], MovingSquare(i - 1)) > 8.0);
  }
  CHECK_FALSE(reader.Next().has_value());  // stays at the end
}

TEST_CASE("a named codec is used, and odd frame sizes are encoded", "[video]") {
  ScratchDir dir("video-codec");
  WriteVideo(dir / "mpeg4.mp4", 5, Options(30, "mpeg4"));
  VideoReader mpeg4(dir / "mpeg4.mp4");
  CHECK(mpeg4.info().codec == "mpeg4");
  CHECK(mpeg4.info().fps == Approx(30.0));

  // 4:2:0 needs even sizes: a 33 x 47 frame is stored at 34 x 48.
  {
    VideoWriter writer(dir / "odd.mp4", 33, 47, Options(5));
    for (int i = 0; i < 3; ++i) writer.Write(MovingSquare(i, 33, 47));
    writer.Close();
  }
  VideoReader odd(dir / "odd.mp4");
  CHECK(odd.info().height == 34);
  CHECK(odd.info().width == 48);
  CHECK(ReadAll(dir / "odd.mp4").size() == 3);
}

TEST_CASE("a writer dropped before Close leaves no file", "[video]") {
  ScratchDir dir("video-abandoned");
  const std::string path = dir / "half.mp4";
  {
    VideoWriter writer(path, kHeight, kWidth);
    writer.Write(MovingSquare(0));
  }
  CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("bad frames and containers are refused by name", "[video]") {
  ScratchDir dir("video-refused");
  ExpectError([&] { VideoWriter(dir / "clip.gif2", kHeight, kWidth); }, Code::kInvalidArgument,
              {"clip.gif2", "unknown container"});
  ExpectError([&] { VideoWriter(dir / "clip.mp4", kHeight, kWidth, Options(25, "no-such-codec")); },
              Code::kInvalidArgument, {"no encoder no-such-codec"});
  ExpectError([&] { VideoWriter(dir / "clip.mp4", kHeight, kWidth, Options(0)); }, Code::kInvalidArgument,
              {"fps"});
  VideoWriter writer(dir / "clip.mp4", kHeight, kWidth);
  ExpectError([&] { writer.Write(MovingSquare(0, kHeight, kWidth + 2)); }, Code::kInvalidArgument,
              {"clip.mp4", "[48,64,3]", "[48,66,3]"});
  ExpectError([&] { writer.Write(Tensor(DType::kFloat32, {kHeight, kWidth, 3})); }, Code::kInvalidArgument,
              {"float32"});
}

TEST_CASE("missing, foreign and empty files are named", "[video]") {
  ScratchDir dir("video-foreign");
  ExpectError([&] { VideoReader(dir / "none.mp4"); }, Code::kNotFound, {"none.mp4", "does not exist"});
  WriteBytes(dir / "text.mp4", "this is not a video, only some text that claims to be one\n");
  ExpectError([&] { VideoReader(dir / "text.mp4"); }, Code::kDataLoss, {"text.mp4"});
  WriteBytes(dir / "empty.mkv", "");
  ExpectError([&] { VideoReader(dir / "empty.mkv"); }, Code::kDataLoss, {"empty.mkv"});
}

TEST_CASE("a truncated video names the frame it ends at", "[video]") {
  ScratchDir dir("video-truncated");
  const std::string name = GENERATE(std::string("clip.mp4"), std::string("clip.mkv"), std::string("clip.avi"));
  CAPTURE(name);
  const std::string full = dir / name, cut = dir / ("cut-" + name);
  WriteVideo(full, 30);
  const std::string bytes = ReadBytes(full);
  WriteBytes(cut, bytes.substr(0, bytes.size() / 2));
  ExpectError([&] { ReadAll(cut); }, Code::kDataLoss, {"cut-" + name, "frame"});
}

TEST_CASE("damaged frame data is an error naming the frame", "[video]") {
  ScratchDir dir("video-damaged");
  const std::string name = GENERATE(std::string("clip.mp4"), std::string("clip.mkv"), std::string("clip.avi"));
  CAPTURE(name);
  const std::string full = dir / name, damaged = dir / ("damaged-" + name);
  WriteVideo(full, 30);
  std::string bytes = ReadBytes(full);
  // Garbage over the middle third of the file, the frames' data. (A few
  // damaged bytes can decode to a wrong picture without a sign: these
  // formats carry no checksums.)
  for (size_t i = bytes.size() / 3; i < 2 * bytes.size() / 3; ++i) bytes[i] = static_cast<char>((i * 131) ^ 0x5a);
  WriteBytes(damaged, bytes);
  ExpectError([&] { ReadAll(damaged); }, Code::kDataLoss, {"damaged-" + name, "frame"});
}

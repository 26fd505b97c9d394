// models/data: image decode/encode, density maps and point datasets,
// including the bad inputs a user will hand them.
#include <cmath>

#include <catch2/catch.hpp>

#include "models/data/density.h"
#include "models/data/image.h"
#include "models/data/points_dataset.h"
#include "tests/models/checkpoint_test_util.h"

using namespace dflow;
using namespace dflow::models;
using dflow::testing::ExpectError;
using dflow::testing::ReadBytes;
using dflow::testing::ScratchDir;
using dflow::testing::WriteBytes;

namespace {

Tensor Gradient(int64_t h, int64_t w, int64_t c) {
  Tensor t(DType::kUInt8, {h, w, c});
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(i * 7);
  return t;
}

double Sum(const Tensor& t) {
  double s = 0;
  for (float v : t.flat<float>()) s += v;
  return s;
}

}  // namespace

TEST_CASE("PNG round trip keeps every pixel", "[data]") {
  ScratchDir dir("image");
  for (int channels : {1, 3, 4}) {
    Tensor image = Gradient(5, 7, channels);
    WritePng(dir / "a.png", image);
    ImageInfo info = ReadImageInfo(dir / "a.png");
    CHECK((info.height == 5 && info.width == 7 && info.channels == channels));
    CHECK(ReadImage(dir / "a.png", channels).Equals(image));
  }
  // Grey to RGB: each channel repeats the grey value.
  Tensor rgb = ReadImage(dir / "a.png", 3);
  CHECK(rgb.shape() == Shape{5, 7, 3});
}

TEST_CASE("bad image files are named errors", "[data]") {
  ScratchDir dir("bad_image");
  ExpectError([&] { ReadImage(dir / "missing.png"); }, Code::kNotFound, {"missing.png"});
  WriteBytes(dir / "text.png", "this is not an image");
  ExpectError([&] { ReadImage(dir / "text.png"); }, Code::kDataLoss, {"text.png", "not an image"});
  WritePng(dir / "good.png", Gradient(40, 40, 3));
  std::string bytes = ReadBytes(dir / "good.png");
  WriteBytes(dir / "truncated.png", bytes.substr(0, bytes.size() / 2));
  ExpectError([&] { ReadImage(dir / "truncated.png"); }, Code::kDataLoss, {"truncated.png"});
  WriteBytes(dir / "empty.png", "");
  ExpectError([&] { ReadImage(dir / "empty.png"); }, Code::kDataLoss, {"empty.png"});
  ExpectError([&] { WritePng(dir / "x.png", Tensor::Zeros(DType::kFloat32, {2, 2, 3})); },
              Code::kInvalidArgument, {"uint8"});
}

// A PNG of `width` x `height` as its header claims: a real 4x4 PNG whose
// IHDR says otherwise (stb_image reads the header before any CRC).
std::string PngClaiming(uint32_t width, uint32_t height) {
  ScratchDir dir("png_claiming");
  WritePng(dir / "a.png", Gradient(4, 4, 3));
  std::string bytes = ReadBytes(dir / "a.png");
  for (int i = 0; i < 4; ++i) {
    bytes[16 + i] = static_cast<char>(width >> (24 - 8 * i));
    bytes[20 + i] = static_cast<char>(height >> (24 - 8 * i));
  }
  return bytes;
}

TEST_CASE("image errors name the format and the real cause", "[data]") {
  ScratchDir dir("image_causes");
  // A JPEG cut off before its frame header is named a JPEG (stb_image's own
  // reason is about the last format it tried: "bad png sig").
  WriteBytes(dir / "cut.jpg", std::string("\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01", 13));
  ExpectError([&] { ReadImage(dir / "cut.jpg"); }, Code::kDataLoss,
              {"cut.jpg", "is a JPEG file whose header cannot be read", "truncated"});
  WriteBytes(dir / "huge.png", PngClaiming(30000, 30000));
  ExpectError([&] { ReadImageInfo(dir / "huge.png"); }, Code::kDataLoss,
              {"huge.png", "too large", "30000x30000 pixels"});
  WriteBytes(dir / "wide.png", PngClaiming(0xffffffffu, 0xffffffffu));
  ExpectError([&] { ReadImageInfo(dir / "wide.png"); }, Code::kDataLoss, {"wide.png", "too large"});
  WriteBytes(dir / "none.png", PngClaiming(0, 0));
  ExpectError([&] { ReadImage(dir / "none.png"); }, Code::kDataLoss, {"none.png", "is empty", "0x0 pixels"});
  WritePng(dir / "good.png", Gradient(40, 40, 3));
  std::string bytes = ReadBytes(dir / "good.png");
  WriteBytes(dir / "half.png", bytes.substr(0, bytes.size() / 2));
  ExpectError([&] { ReadImage(dir / "half.png"); }, Code::kDataLoss,
              {"cannot decode image", "half.png", "as PNG", "truncated or corrupt"});
}

// Found by tests/fuzz/fuzz_image.cc: stb_image decoded a PNM shorter than
// its header from whatever its buffer held, and crashed on 16-bit samples.
TEST_CASE("PNM files must hold every sample, 8 bits each", "[data]") {
  ScratchDir dir("pnm");
  std::string pixels = "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c";
  WriteBytes(dir / "good.ppm", "P6\n# a comment\n2 2\n255\n" + pixels);
  Tensor image = ReadImage(dir / "good.ppm", 3);
  CHECK(image.shape() == Shape{2, 2, 3});
  CHECK(std::string(static_cast<const char*>(image.raw_data()), 12) == pixels);
  WriteBytes(dir / "grey.pgm", "P5 3 1 255 abc");
  CHECK(ReadImage(dir / "grey.pgm", 1).shape() == Shape{1, 3, 1});
  WriteBytes(dir / "short.ppm", "P6\n2 2\n255\n" + pixels.substr(0, 11));
  ExpectError([&] { ReadImage(dir / "short.ppm"); }, Code::kDataLoss,
              {"short.ppm", "truncated PNM", "2x2 pixels, 12 bytes of samples, and 11 follow"});
  WriteBytes(dir / "big.pgm", "P5\n8389 91\n255\n\x01\x02");
  ExpectError([&] { ReadImageInfo(dir / "big.pgm"); }, Code::kDataLoss, {"big.pgm", "truncated PNM"});
  WriteBytes(dir / "deep.pgm", "P5\n500 500\n65535\n" + std::string(500 * 500 * 2, '\x07'));
  ExpectError([&] { ReadImage(dir / "deep.pgm", 3); }, Code::kInvalidArgument,
              {"deep.pgm", "16-bit PNM", "65535"});
}

// Found by fuzzing stb_image itself: its Huffman table builder writes past
// its 257 entries when a DHT segment declares more than 256 codes.
TEST_CASE("a JPEG Huffman table of more than 256 codes is refused before decoding", "[data]") {
  ScratchDir dir("jpeg");
  std::string dht = std::string(1, '\0') + std::string(16, '\x11');  // class 0, id 0; 16 x 17 codes: 272
  dht += std::string(272, '\x01');
  const size_t length = dht.size() + 2;
  std::string file = std::string("\xff\xd8\xff\xc4", 4) + static_cast<char>(length >> 8) +
                     static_cast<char>(length & 0xff) + dht + std::string("\xff\xd9", 2);
  WriteBytes(dir / "huffman.jpg", file);
  ExpectError([&] { ReadImage(dir / "huffman.jpg"); }, Code::kDataLoss,
              {"huffman.jpg", "corrupt JPEG", "declares 272 codes (at most 256)"});
  file[4] = '\x00', file[5] = '\x03';  // a 3-byte segment: the counts run past it
  WriteBytes(dir / "short.jpg", file);
  ExpectError([&] { ReadImage(dir / "short.jpg"); }, Code::kDataLoss,
              {"short.jpg", "corrupt JPEG", "16 code counts run past its segment"});
}

TEST_CASE("density maps sum to the count, also at the border", "[data]") {
  std::vector<Point> points = {{10.5, 10.5}, {0.2, 0.3}, {31.9, 15.0}, {20, 0.1}};
  for (double sigma : {1.0, 2.0, 4.0}) {
    Tensor map = DensityMap(points, 16, 32, sigma);
    CHECK(map.shape() == Shape{16, 32});
    CHECK(Sum(map) == Approx(4.0).epsilon(1e-5));
  }
  // Symmetric around a pixel centre, peaked there, wider for larger sigma.
  Tensor one = DensityMap({{10.5, 10.5}}, 21, 21, 2.0);
  const float* m = one.data<float>();
  CHECK(m[10 * 21 + 9] == Approx(m[10 * 21 + 11]));
  CHECK(m[10 * 21 + 10] > m[10 * 21 + 11]);
  CHECK(DensityMap({{10.5, 10.5}}, 21, 21, 1.0).data<float>()[10 * 21 + 10] > m[10 * 21 + 10]);
  CHECK(Sum(DensityMap({}, 4, 4, 2.0)) == 0);
}

TEST_CASE("density map inputs are checked", "[data]") {
  ExpectError([] { DensityMap({{1, 1}, {8, 2}}, 4, 8, 2.0); }, Code::kInvalidArgument,
              {"point 1 (8, 2) is outside the 8x4 image"});
  ExpectError([] { DensityMap({}, 4, 4, 0); }, Code::kInvalidArgument, {"sigma"});
  ExpectError([] { DensityMap({}, 0, 4, 1); }, Code::kInvalidArgument, {"size"});
}

TEST_CASE("points.json and points.csv datasets", "[data]") {
  ScratchDir dir("points");
  WritePng(dir / "b.png", Gradient(4, 4, 3));
  WritePng(dir / "a.png", Gradient(4, 4, 3));
  WriteBytes(dir / "points.csv", "image,x,y\nb.png,1.5,2\nb.png,3,0.5\na.png,,\n");
  auto images = ReadPointsDataset(dir.path().string());
  REQUIRE(images.size() == 2);
  CHECK(images[0].path == dir / "a.png");
  CHECK(images[0].points.empty());
  REQUIRE(images[1].points.size() == 2);
  CHECK((images[1].points[1].x == 3 && images[1].points[1].y == 0.5));
  // points.json wins, and WritePointsJson writes what ReadPointsDataset reads.
  images[0].points.push_back({0.5, 0.5});
  WritePointsJson(dir.path().string(), images);
  auto again = ReadPointsDataset(dir.path().string());
  REQUIRE(again.size() == 2);
  CHECK(again[0].points.size() == 1);
  CHECK(again[1].points.size() == 2);
}

TEST_CASE("malformed datasets name the file and entry", "[data]") {
  ScratchDir dir("bad_points");
  ExpectError([&] { ReadPointsDataset(dir.path().string()); }, Code::kNotFound,
              {"neither points.json nor points.csv"});
  WriteBytes(dir / "points.json", "{\"a.png\": [[1, 2], [3]]}");
  ExpectError([&] { ReadPointsDataset(dir.path().string()); }, Code::kInvalidArgument,
              {"points.json", "image 'a.png'", "[x, y]"});
  WriteBytes(dir / "points.json", "[1, 2");  // the parser's own message, not a guess
  ExpectError([&] { ReadPointsDataset(dir.path().string()); }, Code::kInvalidArgument,
              {"points.json': not valid JSON: parse error at line 1, column 6"});
  WriteBytes(dir / "points.json", "[1, 2]");
  ExpectError([&] { ReadPointsDataset(dir.path().string()); }, Code::kInvalidArgument,
              {"points.json", "not a JSON object"});
  // The parser's own reason is shown, not hidden behind "not a JSON object".
  WriteBytes(dir / "points.json", "[1, 2");
  ExpectError([&] { ReadPointsDataset(dir.path().string()); }, Code::kInvalidArgument,
              {"points.json", "not valid JSON", "parse error"});
  WriteBytes(dir / "points.json", "{\"a.png\": [[NaN, 2]]}");
  ExpectError([&] { ReadPointsDataset(dir.path().string()); }, Code::kInvalidArgument,
              {"points.json", "not valid JSON", "invalid literal"});
  WriteBytes(dir / "points.json", "{\"a.png\": [[1e999, 2]]}");
  ExpectError([&] { ReadPointsDataset(dir.path().string()); }, Code::kInvalidArgument,
              {"points.json", "not valid JSON", "number overflow parsing '1e999'"});
  // A repeated image would silently lose one of its lists.
  WriteBytes(dir / "points.json", "{\"a.png\": [[1, 2]], \"b.png\": [], \"a.png\": [[3, 4]]}");
  ExpectError([&] { ReadPointsDataset(dir.path().string()); }, Code::kInvalidArgument,
              {"points.json", "lists image 'a.png' twice"});
  WriteBytes(dir / "points.json", "{}");
  ExpectError([&] { ReadPointsDataset(dir.path().string()); }, Code::kInvalidArgument,
              {"annotates no images"});
  WriteBytes(dir / "points.json", "{\"gone.png\": []}");
  ExpectError([&] { ReadPointsDataset(dir.path().string()); }, Code::kNotFound,
              {"'gone.png' does not exist"});
  // A name the file system refuses (longer than a file name may be) is missing too, not a crash.
  WriteBytes(dir / "points.json", "{\"" + std::string(300, 'x') + ".png\": []}");
  ExpectError([&] { ReadPointsDataset(dir.path().string()); }, Code::kNotFound, {"does not exist (File name too long)"});
  WriteBytes(dir / "points.json", "{\"../etc/passwd\": []}");
  ExpectError([&] { ReadPointsDataset(dir.path().string()); }, Code::kInvalidArgument,
              {"inside the dataset folder"});
  std::filesystem::remove(dir / "points.json");
  WriteBytes(dir / "points.csv", "image,x,y\na.png,1,oops\n");
  ExpectError([&] { ReadPointsDataset(dir.path().string()); }, Code::kInvalidArgument,
              {"points.csv' line 2", "'oops' is not a finite number"});
  WriteBytes(dir / "points.csv", "image,x,y\na.png,1\n");
  ExpectError([&] { ReadPointsDataset(dir.path().string()); }, Code::kInvalidArgument,
              {"line 2", "expected 'image,x,y'"});
}

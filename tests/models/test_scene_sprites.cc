// Sprites in synthetic scenes: IDX files read and refused by name, and
// scenes of sprites whose labels are the classes.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "models/data/idx.h"
#include "models/data/scene_generator.h"
#include "tests/models/checkpoint_test_util.h"

using namespace dflow;
using namespace dflow::models;
using dflow::testing::ExpectError;
using dflow::testing::ScratchDir;
using dflow::testing::WriteBytes;

namespace {

// An IDX file's bytes: magic with `type`, big-endian dimensions, `values`.
std::string Idx(const std::vector<uint32_t>& dims, const std::string& values, char type = 8) {
  std::string bytes = {0, 0, type, static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) bytes += static_cast<char>((d >> shift) & 0xFF);
  return bytes + values;
}

// Three 10x10 sprites: a block (label 0), a bar two pixels wide (label 1,
// narrow like a "1"), and a frame (label 2).
std::string SpritePixels() {
  std::string pixels(300, '\0');
  for (int y = 1; y < 9; ++y)
    for (int x = 1; x < 9; ++x) {
      pixels[y * 10 + x] = '\xff';
      if (x == 4 || x == 5) pixels[100 + y * 10 + x] = '\xff';
      if (x < 3 || x > 6 || y < 3 || y > 6) pixels[200 + y * 10 + x] = '\xc0';
    }
  return pixels;
}

}  // namespace

TEST_CASE("IDX files are read, and malformed ones refused naming the file", "[scenes]") {
  Tensor t = ParseIdx(Idx({2, 3}, "abcdef"), "t.idx");
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.data<uint8_t>()[5] == 'f');
  ExpectError([] { ParseIdx("\x01\x00\x08\x01", "a.idx"); }, Code::kDataLoss,
              {"'a.idx' is not an IDX file"});
  ExpectError([] { ParseIdx(Idx({2}, "ab", 0x0D), "f.idx"); }, Code::kDataLoss,
              {"'f.idx' holds values of type 0xd"});
  ExpectError([] { ParseIdx(Idx({2, 3}, "").substr(0, 9), "h.idx"); }, Code::kDataLoss,
              {"'h.idx' is truncated: 9 bytes, its header alone needs 12"});
  ExpectError([] { ParseIdx(Idx({2, 3}, "abc"), "d.idx"); }, Code::kDataLoss,
              {"'d.idx' has 3 bytes of values where its dimensions [2,3] need 6 (truncated)"});
  ExpectError([] { ParseIdx(Idx({2}, "abc"), "x.idx"); }, Code::kDataLoss,
              {"'x.idx' has 3 bytes of values", "need 2"});
  ExpectError([] { ReadIdx("/nonexistent/sprites.idx"); }, Code::kNotFound,
              {"/nonexistent/sprites.idx"});
}

TEST_CASE("sprite and label files must agree", "[scenes]") {
  ScratchDir dir("scene_sprites");
  WriteBytes(dir / "images.idx", Idx({3, 10, 10}, SpritePixels()));
  WriteBytes(dir / "labels.idx", Idx({2}, std::string("\0\1", 2)));
  WriteBytes(dir / "flat.idx", Idx({300}, SpritePixels()));
  ExpectError([&] { ReadSprites(dir / "images.idx", dir / "labels.idx"); },
              Code::kInvalidArgument, {"labels.idx' are [2]", "3 images of", "need [3]"});
  ExpectError([&] { ReadSprites(dir / "flat.idx", dir / "labels.idx"); },
              Code::kInvalidArgument, {"flat.idx' are [300], not [count, height, width]"});
}

TEST_CASE("scenes of sprites: the labels are the classes", "[scenes]") {
  ScratchDir dir("scene_sprites");
  WriteBytes(dir / "images.idx", Idx({3, 10, 10}, SpritePixels()));
  WriteBytes(dir / "labels.idx", Idx({3}, std::string("\0\1\2", 3)));
  SpriteSet sprites = ReadSprites(dir / "images.idx", dir / "labels.idx");
  REQUIRE(sprites.num_classes() == 3);
  auto categories = SpriteCategories(sprites);
  REQUIRE(categories.size() == 3);
  CHECK((categories[0].name == "0" && categories[2].id == 3 && categories[2].name == "2"));

  SceneOptions options{.height = 96, .width = 112, .num_classes = 0, .min_objects = 2,
                       .max_objects = 5, .min_size = 12, .max_size = 30, .seed = 3};
  CHECK(GenerateScene(options, sprites, 1).image.Equals(GenerateScene(options, sprites, 1).image));
  int narrow = 0, objects = 0;
  for (uint64_t index = 0; index < 10; ++index)
    for (const SceneObject& o : GenerateScene(options, sprites, index).objects) {
      ++objects;
      auto [x, y, w, h] = o.bbox;
      CHECK((o.category_id >= 1 && o.category_id <= 3));
      CHECK((x >= 0 && y >= 0 && x + w <= 112 && y + h <= 96));
      CHECK((std::max(w, h) >= 12 && std::max(w, h) <= 30));
      CHECK(o.area <= w * h);
      CHECK(o.full_area - o.area <= 0.3 * o.full_area);
      if (o.category_id == 2) narrow += w * 2 < h;  // the bar keeps its shape
    }
  CHECK(objects >= 20);
  CHECK(narrow > 0);
}

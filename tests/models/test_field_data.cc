// The synthetic field generator and the tiler: determinism, counts, colours
// where flowers are, distractors, and tiles that cover an image exactly.
#include <catch2/catch.hpp>

#include "models/data/field_generator.h"
#include "models/data/tiler.h"
#include "tests/models/checkpoint_test_util.h"

using namespace dflow;
using namespace dflow::models;
using dflow::testing::ExpectError;

TEST_CASE("generated fields are deterministic and flowers are yellow", "[data]") {
  FieldOptions options{.height = 96, .width = 160, .max_flowers = 30, .seed = 7};
  FieldImage a = GenerateField(options, 3), b = GenerateField(options, 3);
  CHECK(a.image.Equals(b.image));
  REQUIRE(a.points.size() == b.points.size());
  CHECK(a.image.shape() == Shape{96, 160, 3});
  CHECK_FALSE(GenerateField(options, 4).image.Equals(a.image));
  size_t total = 0;
  for (uint64_t i = 0; i < 20; ++i) {
    FieldImage f = GenerateField(options, i);
    CHECK(f.points.size() <= 30);
    total += f.points.size();
    for (const Point& p : f.points) {  // the flower's centre pixel: yellow, not green
      const uint8_t* px = f.image.data<uint8_t>() + 3 * (static_cast<int64_t>(p.y) * 160 +
                                                          static_cast<int64_t>(p.x));
      CHECK((px[0] > 180 && px[1] > 150 && px[2] < 120));
    }
  }
  CHECK(total > 100);  // 20 images of uniform [0, 30] flowers
}

TEST_CASE("generator options are checked", "[data]") {
  ExpectError([] { GenerateField({.height = 2}, 0); }, Code::kInvalidArgument, {"size"});
  ExpectError([] { GenerateField({.min_radius = 3, .max_radius = 1}, 0); },
              Code::kInvalidArgument, {"radius"});
}

TEST_CASE("tiles cover an image exactly and stitch back", "[data]") {
  Tensor image(DType::kUInt8, {5, 7, 2});
  for (int64_t i = 0; i < image.NumElements(); ++i) image.data<uint8_t>()[i] = static_cast<uint8_t>(i);
  auto tiles = TileGrid(5, 7, 3);
  REQUIRE(tiles.size() == 6);  // 2 rows x 3 columns
  CHECK((tiles[5].top == 3 && tiles[5].left == 6));
  Tensor corner = CropTile(image, tiles[5], 3);
  CHECK(corner.shape() == Shape{3, 3, 2});
  CHECK(corner.data<uint8_t>()[0] == image.data<uint8_t>()[(3 * 7 + 6) * 2]);
  CHECK(corner.data<uint8_t>()[2] == 0);  // past the right edge: padding

  std::vector<Point> points = {{0.5, 0.5}, {6.9, 4.9}, {3.2, 2.0}};
  CHECK(PointsInTile(points, tiles[0], 3).size() == 1);
  auto last = PointsInTile(points, tiles[5], 3);
  REQUIRE(last.size() == 1);
  CHECK((last[0].x == Approx(0.9) && last[0].y == Approx(1.9)));

  std::vector<Tensor> maps;
  for (size_t i = 0; i < tiles.size(); ++i) {
    Tensor m(DType::kFloat32, {3, 3});
    for (float& v : m.flat<float>()) v = static_cast<float>(i);
    maps.push_back(m);
  }
  Tensor stitched = StitchTiles(maps, tiles, 5, 7);
  CHECK(stitched.shape() == Shape{5, 7});
  CHECK(stitched.data<float>()[4 * 7 + 6] == 5);
  CHECK(stitched.data<float>()[0] == 0);
  ExpectError([&] { CropTile(image, {9, 0}, 3); }, Code::kInvalidArgument, {"outside"});
  ExpectError([&] { StitchTiles(maps, {tiles[0]}, 5, 7); }, Code::kInvalidArgument, {"6 maps"});
}

TEST_CASE("covering tiles stay inside the image and the later tile wins overlaps", "[data]") {
  auto tiles = CoveringTiles(5, 7, 3);
  REQUIRE(tiles.size() == 6);  // the grid of TileGrid, moved back from the edges
  CHECK((tiles[2].top == 0 && tiles[2].left == 4));  // not 6: ends at column 7
  CHECK((tiles[5].top == 2 && tiles[5].left == 4));
  for (const TileSpec& t : tiles) CHECK((t.top + 3 <= 5 && t.left + 3 <= 7));
  std::vector<Tensor> maps;
  for (size_t i = 0; i < tiles.size(); ++i) {
    Tensor m(DType::kFloat32, {3, 3});
    for (float& v : m.flat<float>()) v = static_cast<float>(i);
    maps.push_back(m);
  }
  Tensor stitched = StitchTiles(maps, tiles, 5, 7);
  CHECK(stitched.data<float>()[0 * 7 + 3] == 1);  // only tile 1 covers column 3
  CHECK(stitched.data<float>()[0 * 7 + 4] == 2);  // tiles 1 and 2 overlap: 2 wins
  CHECK(stitched.data<float>()[2 * 7 + 0] == 3);  // rows 2 of tiles 0 and 3: 3 wins
  // A side shorter than a tile cannot avoid padding: the tile starts at 0.
  auto small = CoveringTiles(2, 7, 3);
  CHECK((small[0].top == 0 && small.back().left == 4));
}

// Tiles; see tiler.h.
#include "models/data/tiler.h"

#include <algorithm>
#include <cstring>

namespace dflow::models {

std::vector<TileSpec> TileGrid(int64_t height, int64_t width, int64_t size) {
  DFLOW_REQUIRE(height > 0 && width > 0 && size > 0, "TileGrid: sizes must be positive, got ",
                width, "x", height, " tiles of ", size);
  std::vector<TileSpec> tiles;
  for (int64_t top = 0; top < height; top += size)
    for (int64_t left = 0; left < width; left += size) tiles.push_back({top, left});
  return tiles;
}

std::vector<TileSpec> CoveringTiles(int64_t height, int64_t width, int64_t size) {
  std::vector<TileSpec> tiles = TileGrid(height, width, size);
  for (TileSpec& tile : tiles) {
    tile.top = std::max<int64_t>(0, std::min(tile.top, height - size));
    tile.left = std::max<int64_t>(0, std::min(tile.left, width - size));
  }
  return tiles;
}

Tensor CropTile(const Tensor& image, const TileSpec& tile, int64_t size) {
  DFLOW_REQUIRE(image.rank() == 3, "CropTile: expected an [H, W, C] image, got ",
                image.shape().ToString());
  int64_t h = image.dim(0), w = image.dim(1), c = image.dim(2);
  DFLOW_REQUIRE(tile.top >= 0 && tile.top < h && tile.left >= 0 && tile.left < w,
                "CropTile: tile at (", tile.top, ", ", tile.left, ") is outside the ", w, "x", h,
                " image");
  Tensor out = Tensor::Zeros(image.dtype(), Shape{size, size, c});
  size_t pixel = DTypeSize(image.dtype()) * static_cast<size_t>(c);
  int64_t rows = std::min(size, h - tile.top), cols = std::min(size, w - tile.left);
  const char* src = static_cast<const char*>(image.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * size * pixel, src + ((tile.top + r) * w + tile.left) * pixel, cols * pixel);
  return out;
}

std::vector<Point> PointsInTile(const std::vector<Point>& points, const TileSpec& tile,
                                int64_t size) {
  std::vector<Point> inside;
  for (const Point& p : points) {
    double x = p.x - tile.left, y = p.y - tile.top;
    if (x >= 0 && x < size && y >= 0 && y < size) inside.push_back({x, y});
  }
  return inside;
}

Tensor StitchTiles(const std::vector<Tensor>& maps, const std::vector<TileSpec>& tiles,
                   int64_t height, int64_t width) {
  DFLOW_REQUIRE(maps.size() == tiles.size(), "StitchTiles: ", maps.size(), " maps for ",
                tiles.size(), " tiles");
  Tensor out = Tensor::Zeros(DType::kFloat32, Shape{height, width});
  for (size_t i = 0; i < maps.size(); ++i) {
    const Tensor& m = maps[i];
    DFLOW_REQUIRE(m.dtype() == DType::kFloat32 && m.rank() == 2 && m.dim(0) == m.dim(1),
                  "StitchTiles: map ", i, " must be float32 [size, size], got ", m.SummaryString());
    int64_t size = m.dim(0);
    int64_t rows = std::min(size, height - tiles[i].top), cols = std::min(size, width - tiles[i].left);
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(out.data<float>() + (tiles[i].top + r) * width + tiles[i].left,
                  m.data<float>() + r * size, cols * sizeof(float));
  }
  return out;
}

}  // namespace dflow::models

// Indexing annotated images into tiles; see pipeline.h.
#include <cmath>

#include "models/data/pipeline.h"

namespace dflow::models {
namespace {

// Every point must be a pixel position inside its image: a point outside is
// a wrong annotation (or the wrong image), which training would silently drop.
void CheckPointsInside(const AnnotatedImage& image, const ImageInfo& size) {
  for (size_t i = 0; i < image.points.size(); ++i) {
    const Point& p = image.points[i];
    bool inside = std::isfinite(p.x) && std::isfinite(p.y) && p.x >= 0 && p.x < size.width &&
                  p.y >= 0 && p.y < size.height;
    DFLOW_REQUIRE(inside, "image '", image.path, "': point ", i, " (", p.x, ", ", p.y,
                  ") is outside the image, which is ", size.width, "x", size.height, " pixels");
  }
}

}  // namespace

TileIndex IndexTiles(std::vector<AnnotatedImage> images, int64_t tile_size) {
  DFLOW_REQUIRE(!images.empty(), "IndexTiles: the list of images is empty");
  DFLOW_REQUIRE(tile_size > 0, "IndexTiles: tile_size must be positive, got ", tile_size);
  TileIndex index;
  index.tile_size = tile_size;
  for (size_t i = 0; i < images.size(); ++i) {
    ImageInfo size = ReadImageInfo(images[i].path);
    CheckPointsInside(images[i], size);
    for (const TileSpec& tile : TileGrid(size.height, size.width, tile_size)) {
      int64_t count = static_cast<int64_t>(PointsInTile(images[i].points, tile, tile_size).size());
      index.tiles.push_back({static_cast<int64_t>(i), tile, count});
    }
    index.sizes.push_back(size);
  }
  index.images = std::move(images);
  return index;
}

}  // namespace dflow::models

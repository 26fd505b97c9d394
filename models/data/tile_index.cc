// Indexing annotated images into tiles; see pipeline.h.
#include "models/data/pipeline.h"

namespace dflow::models {

TileIndex IndexTiles(std::vector<AnnotatedImage> images, int64_t tile_size) {
  DFLOW_REQUIRE(!images.empty(), "IndexTiles: the list of images is empty");
  DFLOW_REQUIRE(tile_size > 0, "IndexTiles: tile_size must be positive, got ", tile_size);
  TileIndex index;
  index.tile_size = tile_size;
  for (size_t i = 0; i < images.size(); ++i) {
    ImageInfo size = ReadImageInfo(images[i].path);
    CheckPointsInside(images[i], size.height, size.width);
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

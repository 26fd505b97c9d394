// Cutting images of any size into fixed-size tiles (the flower-counting thesis trains on
// 224x224 tiles of 1280x720 frames) and stitching per-tile density maps
// back into one map. Tiles form a grid from the top-left corner; the last
// row and column of tiles run past the image's edge and are padded with
// zeros, so every pixel is in exactly one tile and stitching is a copy.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/tensor.h"
#include "models/data/density.h"

namespace dflow::models {

struct TileSpec {
  int64_t top = 0, left = 0;  // the tile's origin in the image
};

// The tiles covering a height x width image: ceil(h/size) x ceil(w/size).
std::vector<TileSpec> TileGrid(int64_t height, int64_t width, int64_t size);

// Tiles for prediction: the grid of TileGrid with its last row and column
// moved back to end at the image's edge, overlapping their neighbours, so no
// tile runs past the image (except along a side shorter than a tile). A
// network that never saw zero padding then never sees it; StitchTiles keeps
// the later tile's values where two overlap.
std::vector<TileSpec> CoveringTiles(int64_t height, int64_t width, int64_t size);

// The size x size x C window of `image` ([H, W, C], any dtype) at `tile`,
// zero outside the image.
Tensor CropTile(const Tensor& image, const TileSpec& tile, int64_t size);

// The points inside the tile, moved to the tile's coordinates.
std::vector<Point> PointsInTile(const std::vector<Point>& points, const TileSpec& tile,
                                int64_t size);

// Writes each tile's float32 [size, size] map into a height x width map, in
// order (parts that fall outside the image are dropped; where tiles overlap,
// the later one wins).
Tensor StitchTiles(const std::vector<Tensor>& maps, const std::vector<TileSpec>& tiles,
                   int64_t height, int64_t width);

}  // namespace dflow::models

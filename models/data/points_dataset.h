// Point-annotated image datasets, in formats a user already has:
//
//   DIR/points.json   {"img001.jpg": [[x, y], [x, y], ...], "img002.png": [], ...}
//   DIR/points.csv    image,x,y   (a header row; one row per point; an image
//                     with no points appears once with x and y left empty)
//
// File names are relative to DIR; coordinates are pixels (see density.h).
// points.json wins when both exist. Listing an image does not read it: the
// caller checks points against the image's size when it loads the pixels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/data/density.h"

namespace dflow::models {

struct AnnotatedImage {
  std::string path;  // DIR/file
  std::vector<Point> points;
};

// Throws kNotFound when DIR has neither file or an annotated image is
// missing, kInvalidArgument naming the file, line or entry for malformed
// content (not JSON, a point that is not two finite numbers, a repeated
// image, an empty dataset).
std::vector<AnnotatedImage> ReadPointsDataset(const std::string& dir);

// Writes DIR/points.json (atomically) for the given images, whose paths must
// be inside DIR.
void WritePointsJson(const std::string& dir, const std::vector<AnnotatedImage>& images);

// Every point must be a finite pixel position inside its height x width
// image: a point outside is a wrong annotation (or the wrong image), which
// training would silently drop. kInvalidArgument names the file and point.
void CheckPointsInside(const AnnotatedImage& image, int64_t height, int64_t width);

}  // namespace dflow::models

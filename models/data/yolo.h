// YOLO (Darknet, Ultralytics) detection folders, read into and written from
// detection_dataset.h's types:
//
//   DIR/images/<name>.<ext>   the images (any format image.h reads)
//   DIR/labels/<name>.txt     one line per object: "class cx cy w h"
//   DIR/classes.txt           the class names, one a line (or DIR/obj.names)
//
// `class` is a 0-based line of classes.txt; cx, cy, w, h are the box centre
// and size divided by the image width and height, so each lies in [0, 1].
// Labels carry no image size: the reader takes it from the image header. An
// image without a label file has no objects. YOLO has no crowd regions, no
// difficult flag and no mask areas: the writer drops them, the reader sets
// area = w * h.
#pragma once

#include <string>

#include "models/data/detection_dataset.h"

namespace dflow::models {

// Images (files of the extensions image.h decodes; others are ignored) get
// ids 1..N in sorted name order and file names "images/<name>.<ext>";
// categories ids 1..K in classes.txt order; objects ids 1..M in image order.
// Throws kNotFound for a missing folder or class list, kInvalidArgument
// naming the file and line for a wrong field count, a field that is not a
// number, a class out of range, a value outside [0, 1], a label file without
// an image, or two images with one name (a.jpg, a.png).
DetectionDataset ReadYoloDataset(const std::string& dir);

// Writes DIR/classes.txt (the categories in dataset order) and
// DIR/labels/<stem>.txt for every image (the stem of its file_name, which
// must be unique), empty for an image without objects.
void WriteYoloLabels(const std::string& dir, const DetectionDataset& dataset);

}  // namespace dflow::models

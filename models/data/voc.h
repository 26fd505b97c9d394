// Pascal VOC detection folders, read into and written from
// detection_dataset.h's types:
//
//   DIR/Annotations/<name>.xml       one per image: <filename>, <size>, <object>s
//   DIR/JPEGImages/<filename>        the images (the writer writes annotations only)
//   DIR/ImageSets/Main/<split>.txt   optional: the names of one split, one a line
//
// VOC numbers pixels from 1 and a box covers xmin..xmax inclusive, while COCO
// boxes are continuous from 0, so a pixel box [xmin, xmax] becomes
//   x = xmin - 1, y = ymin - 1, w = xmax - xmin + 1, h = ymax - ymin + 1
// and the writer inverts it (xmin = x + 1, xmax = x + w): integer boxes
// round-trip exactly. VOC has no crowd regions and no mask areas: the reader
// sets area = w * h, the writer drops iscrowd.
#pragma once

#include <string>
#include <vector>

#include "models/data/detection_dataset.h"

namespace dflow::models {

// The 20 classes of VOC 2007 and 2012, in the benchmark's order.
extern const std::vector<std::string> kVocClasses;

struct VocReadOptions {
  std::string split;                 // empty: every file in Annotations/
  std::vector<std::string> classes;  // empty: the sorted names found
};

// Images get ids 1..N in sorted name order, file names "JPEGImages/<filename>";
// categories ids 1..K in the order of `classes` (or of the sorted names);
// objects ids 1..M in image order. Throws kNotFound for a missing folder,
// split file or listed annotation, kInvalidArgument naming the file (and
// object index) for malformed XML, a missing or non-numeric field, an
// inverted box, a box outside the declared size or a class not in `classes`.
DetectionDataset ReadVocDataset(const std::string& dir, const VocReadOptions& options = {});

// Writes DIR/Annotations/<stem>.xml for every image (the stem of its
// file_name, which must be unique), with <filename> the file_name's last part.
void WriteVocAnnotations(const std::string& dir, const DetectionDataset& dataset);

}  // namespace dflow::models

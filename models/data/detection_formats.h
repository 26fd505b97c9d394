// Detection datasets in every format dflow reads (COCO, Pascal VOC, YOLO):
// the format found from what a folder holds, and a dataset written into a
// new folder in any of them, images included (`dflow-detect convert`).
#pragma once

#include <string>

#include "models/data/detection_dataset.h"
#include "models/data/voc.h"

namespace dflow::models {

enum class DetectionFormat { kCoco, kVoc, kYolo };

// "coco", "voc" or "yolo"; kInvalidArgument otherwise.
DetectionFormat ParseDetectionFormat(const std::string& name);
const char* DetectionFormatName(DetectionFormat format);

// DIR/annotations.json: COCO; DIR/Annotations/: VOC; DIR/labels/: YOLO, tried
// in that order. kNotFound lists what it looked for.
DetectionFormat DetectDetectionFormat(const std::string& dir);
// Reads DIR in the format it holds (see coco.h, voc.h, yolo.h); file names
// are relative to DIR. `voc` (a split, a class list) applies to VOC folders
// only: kInvalidArgument when it is set for another format.
DetectionDataset LoadDetectionDataset(const std::string& dir, const VocReadOptions& voc = {});

// Writes `dataset`, whose images lie under `source_dir`, into DIR in
// `format`: each image is copied to the format's image folder (images/ for
// COCO and YOLO, JPEGImages/ for VOC) under the last part of its name, then
// the annotations (DIR/annotations.json for COCO) are written with the new
// names. DIR must be new or empty, and every image must exist with a unique
// name stem before anything is written: kAlreadyExists, kNotFound or
// kInvalidArgument otherwise, naming the folder or image. The dataset is
// written beside DIR and renamed to it at the end: DIR is whole or absent.
void WriteDetectionDataset(const std::string& dir, const DetectionDataset& dataset,
                           DetectionFormat format, const std::string& source_dir);

// VOC and YOLO name an image's annotation file after the stem of its
// file_name (the last part without its extension): throws kInvalidArgument,
// naming `writer` and both images, when two images share one.
void RequireUniqueStems(const DetectionDataset& dataset, const std::string& writer);

}  // namespace dflow::models

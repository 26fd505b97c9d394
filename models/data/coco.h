// COCO JSON for detection: the instances file (images, annotations,
// categories) and the results file (a list of {image_id, category_id, bbox,
// score}), read into and written from detection_dataset.h's types.
#pragma once

#include <string>
#include <vector>

#include "models/data/detection_dataset.h"

namespace dflow::models {

// Parses an instances file's text; `source` names it in errors. Required:
// images[].{id, file_name, width, height}, annotations[].{id, image_id,
// category_id, bbox, area}, categories[].{id, name}; optional iscrowd (0/1,
// default 0) and dflow's own `difficult` (VOC). Throws kInvalidArgument
// naming the source, the entry (list, index, id) and the field for malformed
// JSON, a missing or mistyped field, a negative size, a repeated id, or an
// annotation whose image or category is not listed.
DetectionDataset ParseCocoInstances(const std::string& text, const std::string& source);
// Reads the file (kNotFound when it cannot be read), then as above.
DetectionDataset ReadCocoInstances(const std::string& path);
// The instances JSON (compact, one entry per line); `difficult` only where true.
std::string CocoInstancesJson(const DetectionDataset& dataset);
void WriteCocoInstances(const std::string& path, const DetectionDataset& dataset);

// Parses a results file against its ground truth: every detection must name
// an image and a category of `truth` (pycocotools asserts the images only).
// Errors name the source, the index and the ids involved.
std::vector<Detection> ParseCocoResults(const std::string& text, const std::string& source,
                                        const DetectionDataset& truth);
std::vector<Detection> ReadCocoResults(const std::string& path, const DetectionDataset& truth);
std::string CocoResultsJson(const std::vector<Detection>& detections);
void WriteCocoResults(const std::string& path, const std::vector<Detection>& detections);

}  // namespace dflow::models

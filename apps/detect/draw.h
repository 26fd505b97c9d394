// Drawing detections onto an image for `dflow-detect predict`: each box
// outlined in its class's colour, with a label "name 0.93" on a filled tab.
#pragma once

#include <string>
#include <vector>

#include "graph/tensor.h"
#include "models/data/detection_dataset.h"

namespace dflow::detect_app {

// image: uint8 [H, W, 3], drawn in place; boxes are clipped to it.
// class_name(category_id) names a detection's class.
void DrawDetections(Tensor& image, const std::vector<models::Detection>& detections,
                    const std::vector<int64_t>& category_ids,
                    const std::vector<std::string>& class_names);

}  // namespace dflow::detect_app

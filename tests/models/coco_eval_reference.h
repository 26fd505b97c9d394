// pycocotools' cocoeval.py (evaluate, evaluateImg, accumulate) transcribed
// as directly as C++ allows: the oracle the reorganised EvaluateCoco is
// compared with, bit for bit, on random data.
#pragma once

#include <vector>

#include "models/data/detection_dataset.h"

namespace dflow::testing {

struct ReferenceCocoEval {
  std::vector<double> precision, recall;  // CocoEvalResult's layout
};

ReferenceCocoEval EvaluateCocoReference(const models::DetectionDataset& truth,
                                        const std::vector<models::Detection>& detections);

}  // namespace dflow::testing

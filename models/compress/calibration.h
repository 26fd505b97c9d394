// The float ranges of a graph's tensors over calibration batches, for
// static quantization (quantize_graph.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/session.h"
#include "models/compress/quantize_graph.h"

namespace dflow::models {

struct TensorRange {
  float min = 0, max = 0;
};

// The range of each of `tensors` ("node:0") over the batches: the smallest
// and largest value; or (kPercentile) the values at (100 - percentile)% and
// percentile% of all values seen, from a 4096-bin histogram over the whole
// range (a second pass over the batches); or (kEntropy) [-t, t] within
// those, t the threshold on |x| whose clipped distribution, quantized to the
// codes the range gets, is closest in KL divergence to the one seen (4096
// bins of |x|, TensorRT's calibration). NaN or infinite values are an error
// naming the tensor.
std::vector<TensorRange> CalibrateRanges(Session& session, const std::vector<std::string>& tensors,
                                         const std::vector<FeedList>& batches, Calibrator calibrator,
                                         double percentile);

}  // namespace dflow::models

// Post-training int8 quantization of a frozen float graph (the scheme of
// Jacob et al. 2018 as TensorFlow and TFLite run it): the convolutions
// become the fused int8 ops of ops/quant.h. Static quantization, with
//   - weights symmetric int8, one range per output channel (or per filter),
//     max |w| mapped to 127;
//   - activations asymmetric uint8 with a zero point (MIN_FIRST), their
//     ranges observed by running the float graph on calibration batches
//     (minimum and maximum, or percentiles that leave out rare outliers);
//   - codes passed straight from one int8 convolution to the next, so a
//     network of convolutions runs in int8 from its first QuantizeV2 to the
//     Dequantize before whatever float op follows.
// Dynamic quantization (as PyTorch's quantize_dynamic and ONNX Runtime's,
// which the model compression box of Murabito 2022 uses) needs no
// calibration: each layer quantizes its float input with the input's own
// minimum and maximum at run time, multiplies in int8 and returns float
// (the ...AndDequantize ops), so activations stay float between layers.
// The graph first gets the inference rewrites (batch norms folded into the
// convolutions, bias and ReLU/ReLU6 fused: ops/passes/inference_passes.h),
// so a layer is one _FusedConv2D (or a Conv2D with a constant filter). The
// result is an ordinary graph: it saves, loads and runs like any other, with
// the float graph's output names. See docs/compression.md.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "graph/session.h"

namespace dflow::models {

enum class Calibrator {
  kMinMax,      // the smallest and largest value seen
  kPercentile,  // leave out (100 - percentile)% of the values at each end
  kEntropy,     // the clipping threshold that keeps the most information (TensorRT's KL divergence)
};

struct QuantizeOptions {
  Calibrator calibrator = Calibrator::kMinMax;
  double percentile = 99.99;
  bool per_channel = true;     // a weight range per output channel, else one per filter
  std::set<std::string> skip{};  // layers (node names as the report gives them) kept in float
  bool dynamic = false;          // activation ranges at run time; calibration optional (the error report)
};

// One convolution of the graph, as QuantizeGraph left it.
struct QuantizedLayer {
  std::string name;  // the layer's node (after the inference rewrites); its output keeps the name
  std::string kind;  // "conv 3x3/2", "depthwise 3x3/1", "pointwise"
  bool quantized = false;
  std::string reason;  // why it stayed float
  float input_min = 0, input_max = 0, output_min = 0, output_max = 0;  // the frozen ranges (static)
  bool input_from_int8 = false;  // fed the codes of the int8 layer before it
  bool dynamic = false;          // quantizes its input with the input's range at run time, returns float
  // Returns float (...AndDequantize): no int8 layer reads it, so its output
  // is not requantized to codes (output_min/max: the range calibration saw).
  bool float_output = false;
  std::string shares_with;  // the layer whose int8 convolution also computes this one (same input and geometry)
  // sqrt(mean((int8 - float)^2)) / sqrt(mean(float^2)) of the layer's output
  // on the first calibration batch, the whole int8 graph before it included
  // (NaN for dynamic quantization without calibration batches).
  double relative_error = 0;
};

struct QuantizeResult {
  std::shared_ptr<Graph> graph;
  std::vector<QuantizedLayer> layers;  // in graph order
};

// `graph` must be frozen (no variables: graph/freeze.h); `outputs` are its
// fetches ("detections", "y:1"); each calibration batch feeds the graph's
// inputs by name. Throws kInvalidArgument for static quantization without a
// calibration batch, a variable in the graph or a batch the graph refuses
// (naming it), kNotFound for an unknown output or skipped layer.
QuantizeResult QuantizeGraph(const Graph& graph, const std::vector<std::string>& outputs,
                             const std::vector<FeedList>& calibration, const QuantizeOptions& options = {});

}  // namespace dflow::models

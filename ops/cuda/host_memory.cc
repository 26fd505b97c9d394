// Which inputs and outputs of the GPU kernels live in host memory
// (graph/memory_types.h). The inputs are the small shape-like values the
// kernels read on the host (sizes, axes, permutations, thresholds, gather
// indices): declared, they arrive there from a HostConst, a tensor received
// from the host, or Shape, instead of being copied back from the GPU, a copy
// that waits for every kernel queued before it. Shape and Size make their
// outputs on the host, where such inputs are read.
#include "graph/memory_types.h"

namespace dflow {
namespace {

REGISTER_HOST_MEMORY("_Retval", "GPU", "input");
REGISTER_HOST_MEMORY("HostConst", "GPU", "output");
REGISTER_HOST_MEMORY("_HostToDevice", "GPU", "input");
REGISTER_HOST_MEMORY("_DeviceToHost", "GPU", "output");
REGISTER_HOST_MEMORY("Shape", "GPU", "output");
REGISTER_HOST_MEMORY("Size", "GPU", "output");

REGISTER_HOST_MEMORY("Reshape", "GPU", "shape");
REGISTER_HOST_MEMORY("ExpandDims", "GPU", "axis");
REGISTER_HOST_MEMORY("Slice", "GPU", "begin", "size");
REGISTER_HOST_MEMORY("Transpose", "GPU", "perm");
REGISTER_HOST_MEMORY("ConcatV2", "GPU", "axis");
REGISTER_HOST_MEMORY("Split", "GPU", "axis");
REGISTER_HOST_MEMORY("Fill", "GPU", "dims", "value");
REGISTER_HOST_MEMORY("BroadcastTo", "GPU", "shape");
REGISTER_HOST_MEMORY("Pad", "GPU", "paddings");
REGISTER_HOST_MEMORY("PadV2", "GPU", "paddings", "constant_values");
REGISTER_HOST_MEMORY("Tile", "GPU", "multiples");
REGISTER_HOST_MEMORY("GatherV2", "GPU", "indices", "axis");
REGISTER_HOST_MEMORY("OneHot", "GPU", "indices", "depth", "on_value", "off_value");

REGISTER_HOST_MEMORY("Sum", "GPU", "axis");
REGISTER_HOST_MEMORY("Mean", "GPU", "axis");
REGISTER_HOST_MEMORY("Max", "GPU", "axis");
REGISTER_HOST_MEMORY("Min", "GPU", "axis");
REGISTER_HOST_MEMORY("Prod", "GPU", "axis");
REGISTER_HOST_MEMORY("SumToShape", "GPU", "shape");

REGISTER_HOST_MEMORY("Conv2DBackpropInput", "GPU", "input_sizes");
REGISTER_HOST_MEMORY("Conv2DBackpropFilter", "GPU", "filter_sizes");
REGISTER_HOST_MEMORY("AvgPoolGrad", "GPU", "orig_input_shape");
REGISTER_HOST_MEMORY("ResizeBilinear", "GPU", "size");
REGISTER_HOST_MEMORY("ResizeNearestNeighbor", "GPU", "size");
REGISTER_HOST_MEMORY("ResizeNearestNeighborGrad", "GPU", "size");
REGISTER_HOST_MEMORY("RandomUniform", "GPU", "shape");
REGISTER_HOST_MEMORY("RandomStandardNormal", "GPU", "shape");
REGISTER_HOST_MEMORY("TruncatedNormal", "GPU", "shape");

REGISTER_HOST_MEMORY("TopKV2", "GPU", "k");
REGISTER_HOST_MEMORY("NonMaxSuppressionV5", "GPU", "max_output_size", "iou_threshold", "score_threshold",
                     "soft_nms_sigma");
REGISTER_HOST_MEMORY("CombinedNonMaxSuppression", "GPU", "max_output_size_per_class", "max_total_size",
                     "iou_threshold", "score_threshold");

// The int8 ops' ranges (and the fused products' bias, which the output
// stage is computed from on the host): read and made on the host, passed
// from one int8 op to the next without a copy (ops/cuda/quant.cc).
REGISTER_HOST_MEMORY("QuantizeV2", "GPU", "min_range", "max_range", "output_min", "output_max");
REGISTER_HOST_MEMORY("Dequantize", "GPU", "min_range", "max_range");
REGISTER_HOST_MEMORY("QuantizedRelu", "GPU", "min_features", "max_features", "min_activations", "max_activations");
REGISTER_HOST_MEMORY("QuantizedAddAndRequantize", "GPU", "min_x", "max_x", "min_y", "max_y", "min_freezed_output",
                     "max_freezed_output", "min_z", "max_z");
REGISTER_HOST_MEMORY("QuantizedAddAndReluAndRequantize", "GPU", "min_x", "max_x", "min_y", "max_y",
                     "min_freezed_output", "max_freezed_output", "min_z", "max_z");
REGISTER_HOST_MEMORY("QuantizedMatMulWithBiasAndRequantize", "GPU", "bias", "min_a", "max_a", "min_b", "max_b",
                     "min_freezed_output", "max_freezed_output", "min_out", "max_out");
// The fused convolutions; those that requantize also give their output range.
[[maybe_unused]] const bool kQuantizedConvHostMemory = [] {
  const std::vector<std::string> ranges = {"bias", "min_input", "max_input", "min_filter", "max_filter"};
  std::vector<std::string> requantized = ranges;
  requantized.insert(requantized.end(), {"min_freezed_output", "max_freezed_output", "min_output", "max_output"});
  for (const char* op : {"QuantizedConv2DWithBiasAndRequantize", "QuantizedConv2DWithBiasAndReluAndRequantize",
                         "QuantizedDepthwiseConv2DWithBiasAndRequantize",
                         "QuantizedDepthwiseConv2DWithBiasAndReluAndRequantize"})
    RegisterHostMemory(op, "GPU", requantized);
  for (const char* op : {"QuantizedConv2DWithBiasAndDequantize", "QuantizedConv2DWithBiasAndReluAndDequantize",
                         "QuantizedDepthwiseConv2DWithBiasAndDequantize",
                         "QuantizedDepthwiseConv2DWithBiasAndReluAndDequantize"})
    RegisterHostMemory(op, "GPU", ranges);
  return true;
}();

}  // namespace
}  // namespace dflow

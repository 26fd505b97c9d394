#include "graph/cost_model.h"

#include <algorithm>

namespace dflow {

bool SameTask(const DeviceName& a, const DeviceName& b) {
  return a.job == b.job && a.replica == b.replica && a.task == b.task;
}

double CostModel::Elements(const Shape& shape) const {
  if (!shape.IsFullyDefined()) return static_cast<double>(options_.unknown_elements);
  return static_cast<double>(shape.NumElements());
}

int64_t CostModel::OutputBytes(const Node& node, int output) const {
  return static_cast<int64_t>(Elements(node.output_shape(output))) *
         static_cast<int64_t>(DTypeSize(node.output_dtype(output)));
}

double CostModel::Flops(const Node& node) const {
  const std::string& op = node.op();
  if ((op == "MatMul" || op == "BatchMatMul") && node.num_inputs() == 2) {
    // Each output element is a k-long dot product: k multiplies and k adds.
    const Shape& a = node.input_shape(0);
    bool transposed = node.has_attr("transpose_a") && node.attr<bool>("transpose_a");
    if (op == "BatchMatMul" && node.has_attr("adj_x")) transposed = node.attr<bool>("adj_x");
    double k = a.unknown_rank() || a.rank() < 2 ? 1 : a.dim(a.rank() - (transposed ? 2 : 1));
    return 2 * Elements(node.output_shape(0)) * std::max(k, 1.0);
  }
  if (op == "Conv2D" && node.num_inputs() == 2) {
    // Each NHWC output element sums kh·kw·cin products (the filter is [kh, kw, cin, cout]).
    const Shape& filter = node.input_shape(1);
    double window = 1;
    if (filter.IsFullyDefined() && filter.rank() == 4)
      window = static_cast<double>(filter.dim(0) * filter.dim(1) * filter.dim(2));
    return 2 * Elements(node.output_shape(0)) * window;
  }
  double touched = 0;
  for (int i = 0; i < node.num_inputs(); ++i)
    if (!node.IsRefInput(i)) touched += Elements(node.input_shape(i));
  for (int i = 0; i < node.num_outputs(); ++i) touched += Elements(node.output_shape(i));
  return touched;
}

std::optional<double> CostModel::MeasuredSeconds(const Node& node,
                                                 const DeviceName& device) const {
  auto it = options_.measured.find(node.name());
  if (it == options_.measured.end() || it->second.device_type != device.type) return std::nullopt;
  return it->second.seconds;
}

double CostModel::ComputeSeconds(const Node& node, const DeviceName& device) const {
  if (std::optional<double> measured = MeasuredSeconds(node, device)) return *measured;
  double speed =
      device.type == "GPU" ? options_.gpu_flops_per_second : options_.cpu_flops_per_second;
  return options_.op_overhead_seconds + Flops(node) / speed;
}

double CostModel::TransferSeconds(int64_t bytes, const DeviceName& from,
                                  const DeviceName& to) const {
  if (from.ToString() == to.ToString()) return 0;
  const LinkCost& link = SameTask(from, to) ? options_.same_task : options_.cross_task;
  return link.latency_seconds + static_cast<double>(bytes) / link.bytes_per_second;
}

}  // namespace dflow

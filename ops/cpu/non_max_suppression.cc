// CPU NonMaxSuppressionV5: checks the inputs as TensorFlow does, then hard
// NMS or Soft-NMS from ops/cpu/greedy_nms.h, then writes (and pads) outputs.
#include <algorithm>
#include <cmath>

#include "graph/kernel.h"
#include "ops/cpu/greedy_nms.h"
#include "ops/detection_args.h"

namespace dflow {
namespace {

using detection::Box;

class NonMaxSuppressionV5Kernel : public OpKernel {
 public:
  explicit NonMaxSuppressionV5Kernel(const Node& node)
      : OpKernel(node), pad_(node.attr<bool>("pad_to_max_output_size")) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& boxes = ctx.input(0);
    const Tensor& scores = ctx.input(1);
    const detection::NmsArgs args = detection::CheckNmsArgs(
        node(), boxes, scores, {&ctx.input(2), &ctx.input(3), &ctx.input(4), &ctx.input(5)});
    detection::NmsSelection kept = detection::NonMaxSuppression(
        boxes.data<float>(), scores.data<float>(), boxes.dim(0), args,
        [&](const std::vector<Box>& normalized, const std::vector<int32_t>& order) {
          return detection::HardNms(normalized, order, args.max_output_size, args.iou_threshold);
        });
    WriteOutputs(ctx, kept.indices, kept.scores, args.max_output_size);
  }

 private:
  void WriteOutputs(OpKernelContext& ctx, const std::vector<int32_t>& selected,
                    const std::vector<float>& selected_scores, int64_t max_output) const {
    const auto valid = static_cast<int64_t>(selected.size());
    const int64_t size = pad_ ? max_output : valid;
    int32_t* indices = ctx.allocate_output(0, Shape{size}).data<int32_t>();
    float* out_scores = ctx.allocate_output(1, Shape{size}).data<float>();
    std::copy(selected.begin(), selected.end(), indices);
    std::copy(selected_scores.begin(), selected_scores.end(), out_scores);
    std::fill(indices + valid, indices + size, 0);
    std::fill(out_scores + valid, out_scores + size, 0.0f);
    *ctx.allocate_output(2, Shape{}).data<int32_t>() = static_cast<int32_t>(valid);
  }

  bool pad_;
};

REGISTER_KERNEL("NonMaxSuppressionV5", "CPU", NonMaxSuppressionV5Kernel);

}  // namespace
}  // namespace dflow

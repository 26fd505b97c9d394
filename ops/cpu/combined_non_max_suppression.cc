// CPU CombinedNonMaxSuppression (TensorFlow's): hard NMS for every (image,
// class) pair in parallel, then per image the max_total_size best kept boxes
// over all classes. TensorFlow orders equal scores across classes with an
// unstable sort; dflow keeps them by class, then by the order NMS kept them.
#include <algorithm>

#include "graph/kernel.h"
#include "ops/cpu/greedy_nms.h"
#include "ops/detection_args.h"

namespace dflow {
namespace {

using detection::Box;

struct Detection {
  float score;
  int32_t class_id;
  const float* coords;  // the input box, as given (not normalised)
};

class CombinedNonMaxSuppressionKernel : public OpKernel {
 public:
  explicit CombinedNonMaxSuppressionKernel(const Node& node)
      : OpKernel(node), pad_per_class_(node.attr<bool>("pad_per_class")),
        clip_boxes_(node.attr<bool>("clip_boxes")) {}

  void Compute(OpKernelContext& ctx) const override {
    const detection::CombinedNmsArgs z = detection::CheckCombinedNmsArgs(
        node(), ctx.input(0), ctx.input(1), {&ctx.input(2), &ctx.input(3), &ctx.input(4), &ctx.input(5)},
        pad_per_class_);
    const float iou_threshold = z.iou_threshold, score_threshold = z.score_threshold;
    const float* boxes = ctx.input(0).data<float>();
    const float* scores = ctx.input(1).data<float>();
    // kept[b * classes + c]: class c's kept boxes of image b, best first.
    std::vector<std::vector<Detection>> kept(z.batch * z.classes);
    ctx.pool().ParallelFor(z.batch * z.classes, z.boxes * 20, [&](int64_t begin, int64_t end) {
      for (int64_t bc = begin; bc < end; ++bc) {
        int64_t b = bc / z.classes, c = bc % z.classes;
        const float* image_boxes = boxes + b * z.boxes * z.q * 4;
        const float* class_scores = scores + b * z.boxes * z.classes + c;
        std::vector<Box> normalized(z.boxes);
        std::vector<const float*> coords(z.boxes);
        for (int64_t i = 0; i < z.boxes; ++i) {
          coords[i] = image_boxes + (i * z.q + (z.q == 1 ? 0 : c)) * 4;
          normalized[i] = detection::NormalizeBox(coords[i]);
        }
        auto order = detection::SortedCandidates(class_scores, z.classes, z.boxes,
                                                 score_threshold);
        for (int32_t i : detection::HardNms(normalized, order, z.per_class, iou_threshold))
          kept[bc].push_back({class_scores[i * z.classes], static_cast<int32_t>(c), coords[i]});
      }
    });
    WriteOutputs(ctx, z, kept);
  }

 private:
  void WriteOutputs(OpKernelContext& ctx, const detection::CombinedNmsArgs& z,
                    const std::vector<std::vector<Detection>>& kept) const {
    float* out_boxes = ctx.allocate_output(0, Shape{z.batch, z.per_batch, 4}).data<float>();
    float* out_scores = ctx.allocate_output(1, Shape{z.batch, z.per_batch}).data<float>();
    float* out_classes = ctx.allocate_output(2, Shape{z.batch, z.per_batch}).data<float>();
    int32_t* valid = ctx.allocate_output(3, Shape{z.batch}).data<int32_t>();
    std::fill_n(out_boxes, z.batch * z.per_batch * 4, 0.0f);
    std::fill_n(out_scores, z.batch * z.per_batch, 0.0f);
    std::fill_n(out_classes, z.batch * z.per_batch, 0.0f);
    for (int64_t b = 0; b < z.batch; ++b) {
      std::vector<Detection> all;
      for (int64_t c = 0; c < z.classes; ++c)
        all.insert(all.end(), kept[b * z.classes + c].begin(), kept[b * z.classes + c].end());
      std::stable_sort(all.begin(), all.end(),
                       [](const Detection& x, const Detection& y) { return x.score > y.score; });
      const auto count = std::min<int64_t>(static_cast<int64_t>(all.size()), z.per_batch);
      valid[b] = static_cast<int32_t>(count);
      for (int64_t d = 0; d < count; ++d) {
        int64_t at = b * z.per_batch + d;
        for (int k = 0; k < 4; ++k) {
          float v = all[d].coords[k];
          out_boxes[at * 4 + k] = clip_boxes_ ? std::max(std::min(v, 1.0f), 0.0f) : v;
        }
        out_scores[at] = all[d].score;
        out_classes[at] = static_cast<float>(all[d].class_id);
      }
    }
  }

  bool pad_per_class_, clip_boxes_;
};

REGISTER_KERNEL("CombinedNonMaxSuppression", "CPU", CombinedNonMaxSuppressionKernel);

}  // namespace
}  // namespace dflow

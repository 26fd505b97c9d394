// CPU BoxIou: iou[i, j] = IoU(boxes_a[i], boxes_b[j]) with the NMS kernels'
// formula (ops/box_geometry.h); boxes_b is normalised once, rows in parallel.
#include <vector>

#include "graph/kernel.h"
#include "ops/box_geometry.h"
#include "ops/detection_args.h"

namespace dflow {
namespace {

using detection::Box;

class BoxIouKernel : public OpKernel {
 public:
  explicit BoxIouKernel(const Node& node) : OpKernel(node) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    detection::CheckBoxIouInputs(node(), a, b);
    const int64_t n = a.dim(0), m = b.dim(0);
    float* iou = ctx.allocate_output(0, Shape{n, m}).data<float>();
    std::vector<Box> right(m);
    for (int64_t j = 0; j < m; ++j) right[j] = detection::NormalizeBox(b.data<float>() + 4 * j);
    const float* left = a.data<float>();
    ctx.pool().ParallelFor(n, m * 10, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        Box box = detection::NormalizeBox(left + 4 * i);
        for (int64_t j = 0; j < m; ++j) iou[i * m + j] = detection::Iou(box, right[j]);
      }
    });
  }
};

REGISTER_KERNEL("BoxIou", "CPU", BoxIouKernel);

}  // namespace
}  // namespace dflow

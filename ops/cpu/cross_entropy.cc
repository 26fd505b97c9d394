// CPU kernels for SoftmaxCrossEntropyWithLogits and its sparse-label form.
// Per row, with s = features - max(features) and lse = log(sum(exp(s))):
//   log softmax = s - lse,  loss = sum_c labels_c * (lse - s_c),
//   backprop = exp(s) / sum(exp(s)) - labels.
// lse >= 0 and s <= 0, so nothing overflows however large the logits are.
#include <Eigen/Core>
#include <cmath>

#include "graph/kernel.h"

namespace dflow {
namespace {

template <typename T>
using Row = Eigen::Array<T, Eigen::Dynamic, 1>;

// Writes s = x - max(x) into `shifted` and returns lse = log(sum(exp(s))).
// `shifted` may be x itself.
template <typename T>
T ShiftAndLogSumExp(const T* x, T* shifted, int64_t n) {
  Eigen::Map<const Row<T>> in(x, n);
  Eigen::Map<Row<T>> s(shifted, n);
  T max = in.maxCoeff();
  s = in - max;
  return std::log(s.exp().sum());
}

// The checks and outputs both kernels share: features [batch, classes],
// loss [batch], backprop (reusing features' buffer when it is free).
struct CrossEntropyOutputs {
  int64_t batch, classes;
  Tensor* loss;
  Tensor* backprop;
};

CrossEntropyOutputs AllocateOutputs(OpKernelContext& ctx, const Node& node) {
  const Tensor& features = ctx.input(0);
  DFLOW_REQUIRE(features.rank() == 2, node.Describe(), ": features must be [batch, classes], got ",
                features.shape().ToString());
  int64_t batch = features.dim(0), classes = features.dim(1);
  Tensor* loss = &ctx.allocate_output(0, Shape{batch});
  Tensor* backprop = &ctx.forward_input_or_allocate_output(0, 1, features.shape());
  return {batch, classes, loss, backprop};
}

template <typename T>
class CrossEntropyKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& labels = ctx.input(1);
    DFLOW_REQUIRE(labels.shape() == ctx.input(0).shape(), node().Describe(), ": features ",
                  ctx.input(0).shape().ToString(), " and labels ", labels.shape().ToString(),
                  " must have the same shape");
    const T* features = ctx.input(0).data<T>();  // read before backprop may take its buffer
    CrossEntropyOutputs o = AllocateOutputs(ctx, node());
    const T* label = labels.data<T>();
    T* loss = o.loss->data<T>();
    T* backprop = o.backprop->data<T>();
    int64_t c = o.classes;
    ctx.pool().ParallelFor(o.batch, c * 30, [&](int64_t first, int64_t last) {
      for (int64_t b = first; b < last; ++b) {
        if (c == 0) {
          loss[b] = T(0);
          continue;
        }
        T lse = ShiftAndLogSumExp(features + b * c, backprop + b * c, c);
        Eigen::Map<Row<T>> s(backprop + b * c, c);
        Eigen::Map<const Row<T>> p(label + b * c, c);
        loss[b] = (p * (lse - s)).sum();
        s = (s - lse).exp() - p;
      }
    });
  }
};

template <typename T>
class SparseCrossEntropyKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& labels = ctx.input(1);
    DFLOW_REQUIRE(labels.rank() == 1 && ctx.input(0).rank() == 2 &&
                      labels.dim(0) == ctx.input(0).dim(0),
                  node().Describe(), ": labels ", labels.shape().ToString(),
                  " must be [batch] for features ", ctx.input(0).shape().ToString());
    const T* features = ctx.input(0).data<T>();
    int64_t classes = ctx.input(0).dim(1);
    std::vector<int64_t> index = ReadInt64s(labels, "labels");
    for (size_t b = 0; b < index.size(); ++b)
      if (index[b] < 0 || index[b] >= classes)
        Fail(Code::kInvalidArgument, node().Describe(), ": label value ", index[b], " at index ", b,
             " is outside the valid range of classes [0, ", classes, ")");
    CrossEntropyOutputs o = AllocateOutputs(ctx, node());
    T* loss = o.loss->data<T>();
    T* backprop = o.backprop->data<T>();
    ctx.pool().ParallelFor(o.batch, classes * 30, [&](int64_t first, int64_t last) {
      for (int64_t b = first; b < last; ++b) {
        T* s = backprop + b * classes;
        T lse = ShiftAndLogSumExp(features + b * classes, s, classes);
        loss[b] = lse - s[index[b]];
        Eigen::Map<Row<T>> row(s, classes);
        row = (row - lse).exp();
        row[index[b]] -= T(1);
      }
    });
  }
};

REGISTER_KERNEL_FOR_TYPES("SoftmaxCrossEntropyWithLogits", "CPU", CrossEntropyKernel, float, double);
REGISTER_KERNEL_FOR_TYPES("SparseSoftmaxCrossEntropyWithLogits", "CPU", SparseCrossEntropyKernel,
                          float, double);

}  // namespace
}  // namespace dflow

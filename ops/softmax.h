// Builders for the softmax family over the last axis: Softmax, LogSoftmax,
// and the fused, numerically stable cross-entropy losses (dense and sparse labels).
#pragma once

#include "graph/scope.h"

namespace dflow::ops {

// softmax[..., j] = exp(logits[..., j]) / sum_k exp(logits[..., k]).
Output Softmax(const Scope& scope, const Input& logits);
// logsoftmax[..., j] = logits[..., j] - log(sum_k exp(logits[..., k])).
Output LogSoftmax(const Scope& scope, const Input& logits);

struct CrossEntropy {
  Output loss;      // [batch]
  Output backprop;  // [batch, classes]: d loss / d features
};
// loss[b] = -sum_c labels[b, c] * log(softmax(features)[b, c]);
// backprop = softmax(features) - labels. features and labels are [batch, classes].
CrossEntropy SoftmaxCrossEntropyWithLogits(const Scope& scope, const Input& features,
                                           const Input& labels);
// The same with one class index per example: labels is int32/int64 [batch],
// each in [0, classes) (an out-of-range label is an error).
CrossEntropy SparseSoftmaxCrossEntropyWithLogits(const Scope& scope, const Input& features,
                                                 const Input& labels);

}  // namespace dflow::ops

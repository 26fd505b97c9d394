// Batch normalisation over NHWC images (TensorFlow's FusedBatchNorm and
// FusedBatchNormGrad, per channel over the N, H and W dims) and the
// moving-average update of its population statistics. The ops are declared
// in ops/batch_norm.cc; kernels in ops/cpu/batch_norm*.cc.
#pragma once

#include "graph/scope.h"

namespace dflow::ops {

struct FusedBatchNormAttrs {
  double epsilon = 0.001;
  // true: normalise with the batch's statistics; false: with the `mean` and
  // `variance` inputs (inference with population statistics).
  bool is_training = true;
};

struct FusedBatchNormOutputs {
  Output y;               // scale * (x - mean) / sqrt(variance + epsilon) + offset
  Output batch_mean;      // training: the batch mean [C]; inference: the mean input
  Output batch_variance;  // training: the *unbiased* batch variance (M / (M - 1) times
                          // the one normalised with), for moving averages; inference: the input
  Output reserve_space_1;  // the mean used (what FusedBatchNormGrad needs)
  Output reserve_space_2;  // the variance used: biased batch variance, or the input
};
// x is [N, H, W, C]; scale, offset, mean and variance are [C]. In training
// mode mean and variance are not read (they may also be empty, [0]).
FusedBatchNormOutputs FusedBatchNorm(const Scope& scope, const Input& x, const Input& scale,
                                     const Input& offset, const Input& mean, const Input& variance,
                                     FusedBatchNormAttrs attrs = {});

struct FusedBatchNormGradOutputs {
  Output x_backprop, scale_backprop, offset_backprop;
};
// The backward pass, with reserve_space_1/2 from FusedBatchNorm (the mean and
// variance used). With inv_std = 1 / sqrt(variance + epsilon), M = N*H*W,
// xhat = (x - mean) * inv_std and sums over N, H, W:
//   training:  dx = scale * inv_std / M * (M * dy - sum(dy) - xhat * sum(dy * xhat))
//   inference: dx = scale * inv_std * dy
//   dscale = sum(dy * xhat), doffset = sum(dy)
FusedBatchNormGradOutputs FusedBatchNormGrad(const Scope& scope, const Input& y_backprop,
                                             const Input& x, const Input& scale,
                                             const Input& reserve_space_1,
                                             const Input& reserve_space_2,
                                             FusedBatchNormAttrs attrs = {});

// variable -= (1 - decay) * (variable - value), in place (an AssignSub);
// returns the updated value. Use it on the population mean and variance with
// FusedBatchNorm's batch_mean and batch_variance (decay ~0.99).
Output AssignMovingAverage(const Scope& scope, const Output& variable, const Input& value,
                           const Input& decay);

}  // namespace dflow::ops

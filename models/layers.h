// Layers: small functions that add a layer's variables (with initialisers
// that GlobalVariablesInitializer runs) and its ops under a name scope.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/scope.h"

namespace dflow::models {

enum class Activation { kNone, kRelu, kTanh, kSigmoid };

struct DenseOptions {
  Activation activation = Activation::kNone;
  int64_t seed = 0;  // op-level seed of the kernel initialiser (0: from the graph seed)
};

struct DenseLayer {
  Output kernel;  // [in, units], He-normal (truncated) initialised
  Output bias;    // [units], zeros
  Output output;  // activation(x kernel + bias)
};

// A fully connected layer over the last dim of x ([batch, in], `in` known
// while building), named "<scope>/kernel", "<scope>/bias", ...
DenseLayer Dense(const Scope& scope, const Output& x, int64_t units, DenseOptions options = {});

Output Activate(const Scope& scope, const Output& x, Activation activation);

struct ConvOptions {
  int64_t stride = 1;
  // -1: "SAME"; otherwise this many zeros on every side (PyTorch's padding=p).
  int64_t padding = -1;
  int64_t groups = 1;  // in_channels: depthwise
  bool bias = true;
  Activation activation = Activation::kNone;
  // > 0: the filter starts ~ N(0, stddev^2), untruncated (RetinaNet's heads,
  // Lin et al. 2017, section 4.1); 0: He-normal (truncated).
  double stddev = 0;
  double bias_value = 0;  // the bias's starting value (RetinaNet's prior: -log((1 - pi) / pi))
};

struct ConvLayer {
  Output filter;  // [k, k, in / groups, filters], He-normal (truncated) or N(0, stddev^2)
  Output bias;    // [filters] bias_value, when options.bias
  Output output;
};

// A 2-D convolution layer over NHWC x (channels known while building).
ConvLayer Conv2D(const Scope& scope, const Output& x, int64_t filters, int64_t kernel,
                 ConvOptions options = {});

// The convolution of `layer` (its filter and bias, options as it was built
// with) over another input: one set of weights shared by several inputs,
// as RetinaNet's heads over the pyramid levels. Returns the output.
Output ApplyConv2D(const Scope& scope, const Output& x, const ConvLayer& layer,
                   ConvOptions options = {});

struct ConvTransposeOptions {
  int64_t stride = 2;
  int64_t padding = 0;         // PyTorch's padding: out = (in-1)*stride - 2p + k + output_padding
  int64_t output_padding = 0;
  bool bias = true;
  Activation activation = Activation::kNone;
};

// A transposed convolution (PyTorch's ConvTranspose2d) over NHWC x.
ConvLayer Conv2DTranspose(const Scope& scope, const Output& x, int64_t filters, int64_t kernel,
                          ConvTransposeOptions options = {});

struct BatchNormOptions {
  bool training = true;  // batch statistics and moving-average updates; else the moving ones
  double momentum = 0.1;  // PyTorch's: moving = (1 - momentum) * moving + momentum * batch
  double epsilon = 1e-5;
};

struct BatchNormLayer {
  Output output;
  Output gamma, beta, moving_mean, moving_variance;
  // Training: the two moving-average updates, to run with each train step
  // (group them with the optimizer's train op).
  std::vector<Output> updates;
};

// Batch normalisation over the channels of NHWC x (FusedBatchNorm).
BatchNormLayer BatchNorm(const Scope& scope, const Output& x, BatchNormOptions options = {});

struct ConvBnOptions {
  int64_t stride = 1;
  int64_t groups = 1;
  bool training = true;  // batch-norm mode
  Activation activation = Activation::kRelu;
  int64_t padding = -1;  // zeros on every side; -1: kernel / 2
};

// The conv-BN-ReLU block of torchvision's backbones: a convolution without
// bias (padding k / 2 as PyTorch's), batch normalisation, then the
// activation. Appends the filter, gamma and beta to `variables` and the
// moving-average updates (training) to `updates`.
Output ConvBn(const Scope& scope, const Output& x, int64_t filters, int64_t kernel,
              ConvBnOptions options, std::vector<Output>& variables, std::vector<Output>& updates);

// [N, H, W, C] -> [N, H*W*C], N known or not while building (detection
// heads' outputs, before they are joined).
Output FlattenPerExample(const Scope& scope, const Output& x);

// Every element of the given variables, summed (a model's parameter count).
int64_t CountParameters(const std::vector<Output>& variables);

}  // namespace dflow::models

// Layers; see layers.h.
#include "models/layers.h"

#include <cmath>

#include "ops/ops.h"
#include "ops/batch_norm.h"
#include "ops/conv.h"

namespace dflow::models {

Output Activate(const Scope& scope, const Output& x, Activation activation) {
  switch (activation) {
    case Activation::kNone: return x;
    case Activation::kRelu: return ops::Relu(scope, x);
    case Activation::kTanh: return ops::Tanh(scope, x);
    case Activation::kSigmoid: return ops::Sigmoid(scope, x);
  }
  Fail(Code::kInvalidArgument, "unknown activation");
}

// He et al. (2015): weights ~ N(0, 2 / fan_in) keep the variance of ReLU
// activations constant from layer to layer; truncated at two standard
// deviations, like TensorFlow's variance_scaling initialiser.
namespace {

// A He-normal (truncated) kernel of `shape` for `fan_in` inputs, as a variable.
Output HeVariable(const Scope& scope, const std::string& name, std::vector<int64_t> shape,
                  int64_t fan_in, DType dtype, int64_t seed) {
  // Truncation at 2 sigma shrinks the spread by ~0.88; undo it.
  double stddev = std::sqrt(2.0 / static_cast<double>(fan_in)) / 0.87962566103423978;
  Output normal = ops::TruncatedNormal(scope.WithOpName(name + "/initial"),
                                       Tensor::FromVector<int64_t>(shape), dtype, {.seed = seed});
  return ops::Variable(scope.WithOpName(name),
                       ops::Mul(scope.WithOpName(name + "/scaled"), normal, stddev));
}

// A normal N(0, stddev^2) variable of `shape`, untruncated.
Output NormalVariable(const Scope& scope, const std::string& name, std::vector<int64_t> shape,
                      double stddev, DType dtype) {
  Output normal = ops::RandomStandardNormal(scope.WithOpName(name + "/initial"),
                                            Tensor::FromVector<int64_t>(shape), dtype);
  return ops::Variable(scope.WithOpName(name),
                       ops::Mul(scope.WithOpName(name + "/scaled"), normal, stddev));
}

int64_t Channels(const Output& x, const char* layer) {
  const Shape& shape = x.shape();
  DFLOW_REQUIRE(!shape.unknown_rank() && shape.rank() == 4 && shape.dim(3) > 0, layer,
                ": input must be NHWC with known channels, got ", shape.ToString());
  return shape.dim(3);
}

}  // namespace

DenseLayer Dense(const Scope& scope, const Output& x, int64_t units, DenseOptions options) {
  const Shape& in_shape = x.shape();
  DFLOW_REQUIRE(!in_shape.unknown_rank() && in_shape.rank() == 2 && in_shape.dim(1) > 0,
                "Dense '", scope.NodeName("dense"), "': input must be [batch, features] with "
                "features known, got ", in_shape.ToString());
  DFLOW_REQUIRE(units > 0, "Dense: units must be positive, got ", units);
  int64_t fan_in = in_shape.dim(1);
  DType dtype = x.dtype();
  DenseLayer layer;
  layer.kernel = HeVariable(scope, "kernel", {fan_in, units}, fan_in, dtype, options.seed);
  layer.bias = ops::Variable(scope.WithOpName("bias"), Tensor::Zeros(dtype, {units}));
  Output linear = ops::Add(scope.WithOpName("add"), ops::MatMul(scope.WithOpName("matmul"), x,
                                                                layer.kernel), layer.bias);
  layer.output = Activate(scope, linear, options.activation);
  return layer;
}

ConvLayer Conv2D(const Scope& scope, const Output& x, int64_t filters, int64_t kernel,
                 ConvOptions options) {
  int64_t in = Channels(x, "Conv2D layer");
  DFLOW_REQUIRE(options.groups > 0 && in % options.groups == 0 && filters % options.groups == 0,
                "Conv2D layer: groups ", options.groups, " must divide ", in, " inputs and ",
                filters, " filters");
  ConvLayer layer;
  std::vector<int64_t> shape = {kernel, kernel, in / options.groups, filters};
  layer.filter = options.stddev > 0
                     ? NormalVariable(scope, "filter", shape, options.stddev, x.dtype())
                     : HeVariable(scope, "filter", shape, kernel * kernel * in / options.groups,
                                  x.dtype(), 0);
  if (options.bias) {
    std::vector<double> value(static_cast<size_t>(filters), options.bias_value);
    layer.bias = ops::Variable(scope.WithOpName("bias"),
                               Tensor::FromVector(value, Shape{filters}).CastTo(x.dtype()));
  }
  layer.output = ApplyConv2D(scope, x, layer, options);
  return layer;
}

Output ApplyConv2D(const Scope& scope, const Output& x, const ConvLayer& layer,
                   ConvOptions options) {
  ops::Conv2DAttrs attrs;
  attrs.strides = {1, static_cast<int>(options.stride), static_cast<int>(options.stride), 1};
  if (options.padding >= 0) {
    int p = static_cast<int>(options.padding);
    attrs.padding = "EXPLICIT";
    attrs.explicit_paddings = {0, 0, p, p, p, p, 0, 0};
  }
  Output y = ops::Conv2D(scope.WithOpName("conv"), x, layer.filter, attrs);
  if (options.bias) y = ops::BiasAdd(scope.WithOpName("bias_add"), y, layer.bias);
  return Activate(scope, y, options.activation);
}

ConvLayer Conv2DTranspose(const Scope& scope, const Output& x, int64_t filters, int64_t kernel,
                          ConvTransposeOptions options) {
  int64_t in = Channels(x, "Conv2DTranspose layer");
  ConvLayer layer;
  // TF's layout for a transposed filter: [k, k, out, in].
  layer.filter = HeVariable(scope, "filter", {kernel, kernel, filters, in}, kernel * kernel * in,
                            x.dtype(), 0);
  int s = static_cast<int>(options.stride), p = static_cast<int>(options.padding);
  int op = static_cast<int>(options.output_padding);
  Output y = ops::Conv2DTranspose(scope.WithOpName("conv_transpose"), x, layer.filter,
                                  {.strides = {s, s}, .padding = "EXPLICIT",
                                   .explicit_paddings = {p, p, p, p}, .output_padding = {op, op}});
  if (options.bias) {
    layer.bias = ops::Variable(scope.WithOpName("bias"), Tensor::Zeros(x.dtype(), {filters}));
    y = ops::BiasAdd(scope.WithOpName("bias_add"), y, layer.bias);
  }
  layer.output = Activate(scope, y, options.activation);
  return layer;
}

BatchNormLayer BatchNorm(const Scope& scope, const Output& x, BatchNormOptions options) {
  int64_t channels = Channels(x, "BatchNorm layer");
  DType dtype = x.dtype();
  // A [channels] variable starting at `value`.
  auto filled = [&](const std::string& name, double value) {
    Output init = ops::Fill(scope.WithOpName(name + "/value"),
                            Tensor::FromVector<int64_t>({channels}),
                            Tensor::Scalar(value).CastTo(dtype));
    return ops::Variable(scope.WithOpName(name), init);
  };
  BatchNormLayer layer;
  layer.gamma = filled("gamma", 1.0);
  layer.beta = filled("beta", 0.0);
  layer.moving_mean = filled("moving_mean", 0.0);
  layer.moving_variance = filled("moving_variance", 1.0);
  auto bn = ops::FusedBatchNorm(scope.WithOpName("batch_norm"), x, layer.gamma, layer.beta,
                                layer.moving_mean, layer.moving_variance,
                                {.epsilon = options.epsilon, .is_training = options.training});
  layer.output = bn.y;
  if (options.training) {
    double decay = 1 - options.momentum;
    layer.updates = {
        ops::AssignMovingAverage(scope.WithOpName("update_mean"), layer.moving_mean,
                                 bn.batch_mean, decay),
        ops::AssignMovingAverage(scope.WithOpName("update_variance"), layer.moving_variance,
                                 bn.batch_variance, decay)};
  }
  return layer;
}

Output ConvBn(const Scope& scope, const Output& x, int64_t filters, int64_t kernel,
              ConvBnOptions options, std::vector<Output>& variables, std::vector<Output>& updates) {
  ConvLayer conv = Conv2D(scope, x, filters, kernel,
                          {.stride = options.stride,
                           .padding = options.padding < 0 ? kernel / 2 : options.padding,
                           .groups = options.groups, .bias = false});
  BatchNormLayer bn = BatchNorm(scope, conv.output, {.training = options.training});
  variables.insert(variables.end(), {conv.filter, bn.gamma, bn.beta});
  updates.insert(updates.end(), bn.updates.begin(), bn.updates.end());
  return Activate(scope, bn.output, options.activation);
}

Output FlattenPerExample(const Scope& scope, const Output& x) {
  Output batch = ops::Slice(scope, ops::Shape(scope, x), {0}, {1});
  return ops::Reshape(scope, x, ops::Concat(scope, {batch, ops::Const(scope, {-1})}, 0));
}

int64_t CountParameters(const std::vector<Output>& variables) {
  int64_t total = 0;
  for (const Output& v : variables) total += v.shape().NumElements();
  return total;
}

}  // namespace dflow::models

// Layers; see layers.h.
#include "models/layers.h"

#include <cmath>

#include "ops/ops.h"

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
DenseLayer Dense(const Scope& scope, const Output& x, int64_t units, DenseOptions options) {
  const Shape& in_shape = x.shape();
  DFLOW_REQUIRE(!in_shape.unknown_rank() && in_shape.rank() == 2 && in_shape.dim(1) > 0,
                "Dense '", scope.NodeName("dense"), "': input must be [batch, features] with "
                "features known, got ", in_shape.ToString());
  DFLOW_REQUIRE(units > 0, "Dense: units must be positive, got ", units);
  int64_t fan_in = in_shape.dim(1);
  DType dtype = x.dtype();
  // Truncation at 2 sigma shrinks the spread by ~0.88; undo it.
  double stddev = std::sqrt(2.0 / static_cast<double>(fan_in)) / 0.87962566103423978;
  Output normal = ops::TruncatedNormal(scope.WithOpName("kernel/initial"),
                                       Tensor::FromVector<int64_t>({fan_in, units}), dtype,
                                       {.seed = options.seed});
  DenseLayer layer;
  layer.kernel = ops::Variable(scope.WithOpName("kernel"),
                               ops::Mul(scope.WithOpName("kernel/scaled"), normal, stddev));
  layer.bias = ops::Variable(scope.WithOpName("bias"), Tensor::Zeros(dtype, {units}));
  Output linear = ops::Add(scope.WithOpName("add"), ops::MatMul(scope.WithOpName("matmul"), x,
                                                                layer.kernel), layer.bias);
  layer.output = Activate(scope, linear, options.activation);
  return layer;
}

}  // namespace dflow::models

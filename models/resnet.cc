// ResNet-18 and ResNet-50; see resnet.h.
#include "models/resnet.h"

#include <string>

#include "graph/status.h"
#include "models/layers.h"
#include "ops/ops.h"

namespace dflow::models {
namespace {

class Builder {
 public:
  Builder(ResNet& net, bool training) : net_(net), training_(training) {}

  // conv (no bias, padding k / 2) + batch norm, ReLU when `relu`.
  Output ConvBn(const Scope& s, const Output& x, int64_t filters, int64_t k, int64_t stride,
                bool relu) {
    return models::ConvBn(s, x, filters, k,
                          {.stride = stride, .training = training_,
                           .activation = relu ? Activation::kRelu : Activation::kNone},
                          net_.variables, net_.batch_norm_updates);
  }

  // relu(residual(x) + shortcut(x)); the shortcut projects (1x1 conv + BN)
  // when the stride or the channels change, as torchvision's downsample.
  Output Residual(const Scope& s, const Output& x, const Output& residual, int64_t stride) {
    int64_t out = residual.shape().dim(3);
    Output shortcut = x;
    if (stride != 1 || x.shape().dim(3) != out)
      shortcut = ConvBn(s.NewSubScope("downsample"), x, out, 1, stride, false);
    return ops::Relu(s, ops::Add(s, residual, shortcut));
  }

  // 3x3 (stride) + 3x3, expansion 1.
  Output BasicBlock(const Scope& s, const Output& x, int64_t width, int64_t stride) {
    Output h = ConvBn(s.NewSubScope("conv1"), x, width, 3, stride, true);
    h = ConvBn(s.NewSubScope("conv2"), h, width, 3, 1, false);
    return Residual(s, x, h, stride);
  }

  // 1x1 + 3x3 (stride) + 1x1 to 4 * width.
  Output Bottleneck(const Scope& s, const Output& x, int64_t width, int64_t stride) {
    Output h = ConvBn(s.NewSubScope("conv1"), x, width, 1, 1, true);
    h = ConvBn(s.NewSubScope("conv2"), h, width, 3, stride, true);
    h = ConvBn(s.NewSubScope("conv3"), h, 4 * width, 1, 1, false);
    return Residual(s, x, h, stride);
  }

 private:
  ResNet& net_;
  bool training_;
};

}  // namespace

ResNet BuildResNet(const Scope& scope, const Output& images, ResNetOptions options) {
  DFLOW_REQUIRE(options.depth == 18 || options.depth == 50,
                "BuildResNet: depth must be 18 or 50, got ", options.depth);
  const bool basic = options.depth == 18;
  const int blocks[4] = {basic ? 2 : 3, basic ? 2 : 4, basic ? 2 : 6, basic ? 2 : 3};
  Scope s = scope.NewSubScope("resnet");
  ResNet net;
  Builder b(net, options.training);
  Output x = b.ConvBn(s.NewSubScope("stem"), images, 64, 7, 2, true);
  x = ops::MaxPool(s.WithOpName("max_pool"), x, {.ksize = {1, 3, 3, 1}, .strides = {1, 2, 2, 1},
                                                 .padding = "EXPLICIT",
                                                 .explicit_paddings = {0, 0, 1, 1, 1, 1, 0, 0}});
  for (int layer = 0; layer < 4; ++layer) {
    Scope ls = s.NewSubScope("layer" + std::to_string(layer + 1));
    const int64_t width = int64_t{64} << layer;
    for (int block = 0; block < blocks[layer]; ++block) {
      Scope bs = ls.NewSubScope("block" + std::to_string(block));
      const int64_t stride = layer > 0 && block == 0 ? 2 : 1;
      x = basic ? b.BasicBlock(bs, x, width, stride) : b.Bottleneck(bs, x, width, stride);
    }
    if (layer > 0) net.features.push_back(x);
  }
  return net;
}

}  // namespace dflow::models

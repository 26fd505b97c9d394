// ResNet-18 and ResNet-50; see resnet.h.
#include "models/resnet.h"

#include <string>

#include "graph/status.h"
#include "models/layers.h"
#include "ops/ops.h"

namespace dflow::models {
namespace {

int BlocksIn(int layer, bool basic) {
  constexpr int kBasic[4] = {2, 2, 2, 2}, kBottleneck[4] = {3, 4, 6, 3};
  return basic ? kBasic[layer] : kBottleneck[layer];
}

std::string BlockName(int layer, int block) {
  return "layer" + std::to_string(layer + 1) + "/block" + std::to_string(block);
}

// The block's inner convolutions, whose channels may be set: "conv1" of a
// BasicBlock, "conv1" and "conv2" of a Bottleneck.
std::vector<std::string> InnerLayers(const ResNetOptions& options) {
  const bool basic = options.depth == 18;
  std::vector<std::string> layers;
  for (int layer = 0; layer < 4; ++layer)
    for (int block = 0; block < BlocksIn(layer, basic); ++block) {
      layers.push_back(BlockName(layer, block) + "/conv1");
      if (!basic) layers.push_back(BlockName(layer, block) + "/conv2");
    }
  return layers;
}

void CheckOptions(const ResNetOptions& options) {
  DFLOW_REQUIRE(options.depth == 18 || options.depth == 50,
                "BuildResNet: depth must be 18 or 50, got ", options.depth);
  CheckLayerChannels(options.channels, InnerLayers(options), "ResNet-" + std::to_string(options.depth));
}

class ResNetBuilder {
 public:
  ResNetBuilder(ResNet& net, const ResNetOptions& options) : net_(net), options_(options) {}

  // conv (no bias, padding k / 2) + batch norm, ReLU when `relu`.
  Output ConvBn(const Scope& s, const Output& x, int64_t filters, int64_t k, int64_t stride,
                bool relu) {
    return models::ConvBn(s, x, filters, k,
                          {.stride = stride, .training = options_.training,
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
  Output BasicBlock(const Scope& s, const std::string& name, const Output& x, int64_t width, int64_t stride) {
    Output h = ConvBn(s.NewSubScope("conv1"), x, Inner(name + "/conv1", width), 3, stride, true);
    h = ConvBn(s.NewSubScope("conv2"), h, width, 3, 1, false);
    return Residual(s, x, h, stride);
  }

  // 1x1 + 3x3 (stride) + 1x1 to 4 * width.
  Output Bottleneck(const Scope& s, const std::string& name, const Output& x, int64_t width, int64_t stride) {
    Output h = ConvBn(s.NewSubScope("conv1"), x, Inner(name + "/conv1", width), 1, 1, true);
    h = ConvBn(s.NewSubScope("conv2"), h, Inner(name + "/conv2", width), 3, stride, true);
    h = ConvBn(s.NewSubScope("conv3"), h, 4 * width, 1, 1, false);
    return Residual(s, x, h, stride);
  }

 private:
  // An inner layer's channels: the options' count, or the block's width.
  int64_t Inner(const std::string& layer, int64_t width) const {
    return LayerChannels(options_.channels, layer, width);
  }

  ResNet& net_;
  const ResNetOptions& options_;
};

}  // namespace

ResNet BuildResNet(const Scope& scope, const Output& images, ResNetOptions options) {
  CheckOptions(options);
  const bool basic = options.depth == 18;
  Scope s = scope.NewSubScope("resnet");
  ResNet net;
  ResNetBuilder b(net, options);
  Output x = b.ConvBn(s.NewSubScope("stem"), images, 64, 7, 2, true);
  x = ops::MaxPool(s.WithOpName("max_pool"), x, {.ksize = {1, 3, 3, 1}, .strides = {1, 2, 2, 1},
                                                 .padding = "EXPLICIT",
                                                 .explicit_paddings = {0, 0, 1, 1, 1, 1, 0, 0}});
  for (int layer = 0; layer < 4; ++layer) {
    Scope ls = s.NewSubScope("layer" + std::to_string(layer + 1));
    const int64_t width = int64_t{64} << layer;
    for (int block = 0; block < BlocksIn(layer, basic); ++block) {
      Scope bs = ls.NewSubScope("block" + std::to_string(block));
      const int64_t stride = layer > 0 && block == 0 ? 2 : 1;
      const std::string name = BlockName(layer, block);
      x = basic ? b.BasicBlock(bs, name, x, width, stride) : b.Bottleneck(bs, name, x, width, stride);
    }
    if (layer > 0) net.features.push_back(x);
  }
  return net;
}

std::vector<ChannelGroup> ResNetChannelGroups(const ResNetOptions& options, const std::string& prefix) {
  CheckOptions(options);
  const std::string under = prefix + "resnet/";  // BuildResNet's own scope
  std::vector<ChannelGroup> groups;
  const bool basic = options.depth == 18;
  for (int layer = 0; layer < 4; ++layer)
    for (int block = 0; block < BlocksIn(layer, basic); ++block)
      for (int conv = 1; conv <= (basic ? 1 : 2); ++conv) {
        const std::string name = BlockName(layer, block) + "/conv" + std::to_string(conv);
        ChannelGroup g{.layer = name,
                       .channels = LayerChannels(options.channels, name, int64_t{64} << layer),
                       .importance = {under + name + "/gamma", 0},
                       .slices = OwnChannelSlices(under + name, true)};
        g.slices.push_back({under + BlockName(layer, block) + "/conv" + std::to_string(conv + 1) + "/filter", 2});
        groups.push_back(std::move(g));
      }
  return groups;
}

}  // namespace dflow::models

// MobileNetV1-SSD; see mobilenet_ssd.h.
#include "models/mobilenet_ssd.h"

#include <algorithm>
#include <cmath>

#include "graph/status.h"
#include "models/layers.h"
#include "ops/ops.h"

namespace dflow::models {
namespace {

class MobileNetSsdBuilder {
 public:
  MobileNetSsdBuilder(MobileNetSsd& net, bool training) : net_(net), training_(training) {}

  // conv (no bias) + batch norm + ReLU; padding 1 on every side as PyTorch's.
  Output ConvBn(const Scope& s, const Output& x, int64_t filters, int64_t k, int64_t stride,
                int64_t groups = 1) {
    return models::ConvBn(s, x, filters, k,
                          {.stride = stride, .groups = groups, .training = training_},
                          net_.variables, net_.batch_norm_updates);
  }
  // depthwise 3x3 (stride s) then pointwise 1x1, each with BN and ReLU.
  Output ConvDw(const Scope& s, const Output& x, int64_t out, int64_t stride) {
    int64_t in = x.shape().dim(3);
    Output h = ConvBn(s.NewSubScope("depthwise"), x, in, 3, stride, in);
    return ConvBn(s.NewSubScope("pointwise"), h, out, 1, 1);
  }
  // A convolution with bias (extras and heads).
  Output Conv(const Scope& s, const Output& x, int64_t filters, int64_t k, int64_t stride,
              int64_t padding, Activation activation) {
    ConvLayer l = Conv2D(s, x, filters, k, {.stride = stride, .padding = padding,
                                            .activation = activation});
    net_.variables.insert(net_.variables.end(), {l.filter, l.bias});
    return l.output;
  }

 private:
  MobileNetSsd& net_;
  bool training_;
};

// The width multiplier applied to a layer's channel count.
int64_t Thinned(int64_t channels, double alpha) {
  return std::max<int64_t>(8, std::llround(alpha * static_cast<double>(channels)));
}

// MobileNetV1's 13 depthwise-separable blocks {pointwise channels, stride},
// and SSD's four extras {1x1 reduce, 3x3 stride-2 expand}.
constexpr int64_t kBlocks[13][2] = {{64, 1},  {128, 2}, {128, 1}, {256, 2}, {256, 1},  {512, 2}, {512, 1},
                                    {512, 1}, {512, 1}, {512, 1}, {512, 1}, {1024, 2}, {1024, 1}};
constexpr int64_t kMobileNetExtras[4][2] = {{256, 512}, {128, 256}, {128, 256}, {128, 256}};
// The blocks whose outputs the first two heads read: conv11 and conv13.
constexpr int kFeatureBlocks[2] = {10, 12};

std::string Block(int i) { return "block" + std::to_string(i + 1); }
std::string Extra(int i) { return "extra" + std::to_string(i + 1); }
std::string Head(int i) { return "head" + std::to_string(i + 1); }

// A layer whose output channels may be set (pruned).
struct ChannelLayer {
  std::string name;
  int64_t base;     // channels at width 1
  bool batch_norm;  // conv-BN-ReLU (else conv with bias and ReLU)
};

std::vector<ChannelLayer> ChannelLayers() {
  std::vector<ChannelLayer> layers{{"stem", 32, true}};
  for (int i = 0; i < 13; ++i) layers.push_back({Block(i) + "/pointwise", kBlocks[i][0], true});
  for (int i = 0; i < 4; ++i) {
    layers.push_back({Extra(i) + "/reduce", kMobileNetExtras[i][0], false});
    layers.push_back({Extra(i) + "/expand", kMobileNetExtras[i][1], false});
  }
  return layers;
}

// Refuses channel counts for layers the network does not have, or below 1.
void CheckChannels(const MobileNetSsdOptions& options) {
  std::vector<std::string> names;
  for (const ChannelLayer& l : ChannelLayers()) names.push_back(l.name);
  CheckLayerChannels(options.channels, names, "MobileNet-SSD");
}

// The output channels of `layer`: the options' count, or the width
// multiplier's.
int64_t Channels(const MobileNetSsdOptions& options, const std::string& layer, int64_t base) {
  return LayerChannels(options.channels, layer, Thinned(base, options.width_multiplier));
}

// The input axis of the filters of a head.
void AddHead(std::vector<ChannelSlice>& slices, int head) {
  slices.push_back({Head(head) + "/boxes/filter", 2});
  slices.push_back({Head(head) + "/classes/filter", 2});
}

// What reads the output of `layer` (index into ChannelLayers()).
std::vector<ChannelSlice> ConsumerSlices(size_t layer) {
  std::vector<ChannelSlice> slices;
  if (layer <= 13) {  // the stem or a block: the next block, a head, the extras
    const int block = static_cast<int>(layer) - 1;  // -1: the stem
    if (block + 1 < 13) {
      std::vector<ChannelSlice> depthwise = OwnChannelSlices(Block(block + 1) + "/depthwise", true);
      slices.insert(slices.end(), depthwise.begin(), depthwise.end());
      slices.push_back({Block(block + 1) + "/pointwise/filter", 2});
    } else {
      slices.push_back({Extra(0) + "/reduce/filter", 2});
    }
    for (int h = 0; h < 2; ++h)
      if (block == kFeatureBlocks[h]) AddHead(slices, h);
    return slices;
  }
  const int extra = static_cast<int>(layer - 14) / 2;
  if ((layer - 14) % 2 == 0) return {{Extra(extra) + "/expand/filter", 2}};  // reduce -> expand
  if (extra + 1 < 4) slices.push_back({Extra(extra + 1) + "/reduce/filter", 2});
  AddHead(slices, extra + 2);
  return slices;
}
}  // namespace

MobileNetSsd BuildMobileNetSsd(const Scope& scope, const Output& images,
                               MobileNetSsdOptions options) {
  DFLOW_REQUIRE(options.width_multiplier > 0, "BuildMobileNetSsd: width_multiplier must be > 0, got ",
                options.width_multiplier);
  CheckChannels(options);
  MobileNetSsd net;
  MobileNetSsdBuilder b(net, options.training);
  const Scope backbone = OnDevice(scope, options.devices.backbone);
  const Scope extra_layers = OnDevice(scope, options.devices.extras);
  const Scope heads = OnDevice(scope, options.devices.heads);
  Output x = b.ConvBn(backbone.NewSubScope("stem"), images, Channels(options, "stem", 32), 3, 2);
  for (int i = 0; i < 13; ++i) {
    x = b.ConvDw(backbone.NewSubScope(Block(i)), x, Channels(options, Block(i) + "/pointwise", kBlocks[i][0]),
                 kBlocks[i][1]);
    if (i == kFeatureBlocks[0] || i == kFeatureBlocks[1]) net.features.push_back(x);  // 19x19x512, 10x10x1024
  }
  net.backbone_variables = net.variables;
  for (int i = 0; i < 4; ++i) {
    Scope s = extra_layers.NewSubScope(Extra(i));
    x = b.Conv(s.NewSubScope("reduce"), x, Channels(options, Extra(i) + "/reduce", kMobileNetExtras[i][0]), 1, 1, 0,
               Activation::kRelu);
    x = b.Conv(s.NewSubScope("expand"), x, Channels(options, Extra(i) + "/expand", kMobileNetExtras[i][1]), 3, 2, 1,
               Activation::kRelu);
    net.features.push_back(x);
  }
  std::vector<Input> boxes, classes;
  for (size_t i = 0; i < net.features.size(); ++i) {
    Scope s = heads.NewSubScope(Head(static_cast<int>(i)));
    const Output& f = net.features[i];
    Output box = b.Conv(s.NewSubScope("boxes"), f, 6 * 4, 3, 1, 1, Activation::kNone);
    Output cls = b.Conv(s.NewSubScope("classes"), f, 6 * options.num_classes, 3, 1, 1,
                        Activation::kNone);
    boxes.push_back(FlattenPerExample(s, box));
    classes.push_back(FlattenPerExample(s, cls));
  }
  net.boxes = ops::Concat(heads.WithOpName("boxes"), boxes, 1);
  net.classes = ops::Concat(heads.WithOpName("classes"), classes, 1);
  return net;
}

std::vector<ChannelGroup> MobileNetSsdChannelGroups(const MobileNetSsdOptions& options) {
  CheckChannels(options);
  const std::vector<ChannelLayer> layers = ChannelLayers();
  std::vector<ChannelGroup> groups;
  for (size_t i = 0; i < layers.size(); ++i) {
    const ChannelLayer& l = layers[i];
    ChannelGroup g{.layer = l.name,
                   .channels = Channels(options, l.name, l.base),
                   .importance = l.batch_norm ? ChannelSlice{l.name + "/gamma", 0} : ChannelSlice{l.name + "/filter", 3},
                   .slices = OwnChannelSlices(l.name, l.batch_norm)};
    std::vector<ChannelSlice> consumers = ConsumerSlices(i);
    g.slices.insert(g.slices.end(), consumers.begin(), consumers.end());
    groups.push_back(std::move(g));
  }
  return groups;
}

}  // namespace dflow::models

// SqueezeNet-SSD; see squeezenet_ssd.h.
#include "models/squeezenet_ssd.h"

#include <iterator>
#include <string>

#include "models/layers.h"
#include "ops/ops.h"

namespace dflow::models {
namespace {

// The extra blocks: 1x1 reduce channels, separable 3x3 expand channels,
// stride 2 with this padding (2 on the first, so 18 cells become 10 as in
// the reference's priors).
struct ExtraBlock {
  int64_t reduce, expand, padding;
};
constexpr ExtraBlock kExtras[] = {
    {256, 512, 2}, {256, 512, 1}, {128, 256, 1}, {128, 256, 1}, {128, 256, 1}};

constexpr size_t kHeads = std::size(kExtras) + 1;
constexpr char kBackbone[] = "squeezenet/";

std::string Extra(size_t i) { return "extra" + std::to_string(i + 1); }
std::string HeadName(size_t i) { return "head" + std::to_string(i + 1); }

// Splits the options' channel counts: the backbone's go to its options
// (without the "squeezenet/" prefix); the extras' must be known layers.
SqueezeNetOptions BackboneOptions(const SqueezeNetSsdOptions& options) {
  SqueezeNetOptions backbone = options.backbone;
  std::map<std::string, int64_t> extras;
  for (const auto& [layer, count] : ChannelsUnder(options.channels, kBackbone, extras)) backbone.channels[layer] = count;
  std::vector<std::string> layers;
  for (size_t i = 0; i < std::size(kExtras); ++i) layers.insert(layers.end(), {Extra(i) + "/reduce", Extra(i) + "/expand"});
  CheckLayerChannels(extras, layers, "SqueezeNet-SSD");
  return backbone;
}

int64_t Channels(const SqueezeNetSsdOptions& options, const std::string& layer, int64_t published) {
  return LayerChannels(options.channels, layer, published);
}

// What reads feature map `map`: both heads' first layers (a separable
// head's depthwise and pointwise, or the last head's 1x1).
std::vector<ChannelSlice> HeadReaders(size_t map) {
  std::vector<ChannelSlice> slices;
  for (const char* kind : {"/boxes", "/classes"}) {
    const std::string head = HeadName(map) + kind;
    if (map + 1 == kHeads) {
      slices.push_back({head + "/filter", 2});
      continue;
    }
    std::vector<ChannelSlice> depthwise = OwnChannelSlices(head + "/depthwise", false);
    slices.insert(slices.end(), depthwise.begin(), depthwise.end());
    slices.push_back({head + "/pointwise/filter", 2});
  }
  return slices;
}

class SqueezeNetSsdBuilder {
 public:
  explicit SqueezeNetSsdBuilder(SqueezeNetSsd& net) : net_(net) {}

  // A convolution with bias (extras and heads, which have no batch norm).
  Output Conv(const Scope& s, const Output& x, int64_t filters, int64_t k, ConvOptions options) {
    ConvLayer l = Conv2D(s, x, filters, k, options);
    net_.variables.insert(net_.variables.end(), {l.filter, l.bias});
    return l.output;
  }
  // depthwise 3x3 (stride, padding), ReLU, then pointwise 1x1 without
  // activation: the reference's SeperableConv2d.
  Output Separable(const Scope& s, const Output& x, int64_t filters, int64_t stride,
                   int64_t padding) {
    const int64_t in = x.shape().dim(3);
    Output h =
        Conv(s.NewSubScope("depthwise"), x, in, 3,
             {.stride = stride, .padding = padding, .groups = in, .activation = Activation::kRelu});
    return Conv(s.NewSubScope("pointwise"), h, filters, 1, {.padding = 0});
  }
  // One head: separable 3x3, or 1x1 on the last map.
  Output Head(const Scope& s, const Output& f, int64_t filters, bool last) {
    if (last) return Conv(s, f, filters, 1, {.padding = 0});
    return Separable(s, f, filters, 1, 1);
  }

 private:
  SqueezeNetSsd& net_;
};

}  // namespace

SqueezeNetSsd BuildSqueezeNetSsd(const Scope& scope, const Output& images,
                                 SqueezeNetSsdOptions options) {
  const SqueezeNetOptions backbone_options = BackboneOptions(options);
  SqueezeNetSsd net;
  const Scope extra_layers = OnDevice(scope, options.devices.extras);
  const Scope heads = OnDevice(scope, options.devices.heads);
  SqueezeNet backbone = BuildSqueezeNet(OnDevice(scope, options.devices.backbone).NewSubScope("squeezenet"),
                                        images, backbone_options);
  net.variables = net.backbone_variables = backbone.variables;
  net.batch_norm_updates = backbone.batch_norm_updates;
  net.features.push_back(backbone.fire8);
  SqueezeNetSsdBuilder b(net);
  Output x = backbone.fire9;
  for (size_t i = 0; i < std::size(kExtras); ++i) {
    Scope s = extra_layers.NewSubScope(Extra(i));
    x = b.Conv(s.NewSubScope("reduce"), x, Channels(options, Extra(i) + "/reduce", kExtras[i].reduce), 1,
               {.padding = 0, .activation = Activation::kRelu});
    x = b.Separable(s.NewSubScope("expand"), x, Channels(options, Extra(i) + "/expand", kExtras[i].expand), 2,
                    kExtras[i].padding);
    net.features.push_back(x);
  }
  std::vector<Input> boxes, classes;
  for (size_t i = 0; i < net.features.size(); ++i) {
    Scope s = heads.NewSubScope(HeadName(i));
    const bool last = i + 1 == net.features.size();
    const Output& f = net.features[i];
    boxes.push_back(FlattenPerExample(s, b.Head(s.NewSubScope("boxes"), f, 6 * 4, last)));
    classes.push_back(
        FlattenPerExample(s, b.Head(s.NewSubScope("classes"), f, 6 * options.num_classes, last)));
  }
  net.boxes = ops::Concat(heads.WithOpName("boxes"), boxes, 1);
  net.classes = ops::Concat(heads.WithOpName("classes"), classes, 1);
  return net;
}

std::vector<ChannelGroup> SqueezeNetSsdChannelGroups(const SqueezeNetSsdOptions& options) {
  const SqueezeNetOptions backbone_options = BackboneOptions(options);
  std::vector<ChannelGroup> groups =
      SqueezeNetChannelGroups(backbone_options, kBackbone, HeadReaders(0), {{Extra(0) + "/reduce/filter", 2}});
  for (ChannelGroup& g : groups) g.layer = kBackbone + g.layer;
  for (size_t i = 0; i < std::size(kExtras); ++i) {
    // reduce (1x1, ReLU) -> the expand's depthwise and pointwise
    const std::string reduce = Extra(i) + "/reduce", expand = Extra(i) + "/expand";
    ChannelGroup r{.layer = reduce,
                   .channels = Channels(options, reduce, kExtras[i].reduce),
                   .importance = {reduce + "/filter", 3},
                   .slices = OwnChannelSlices(reduce, false)};
    std::vector<ChannelSlice> depthwise = OwnChannelSlices(expand + "/depthwise", false);
    r.slices.insert(r.slices.end(), depthwise.begin(), depthwise.end());
    r.slices.push_back({expand + "/pointwise/filter", 2});
    // expand's pointwise -> the next extra and feature map i + 1's heads
    ChannelGroup e{.layer = expand,
                   .channels = Channels(options, expand, kExtras[i].expand),
                   .importance = {expand + "/pointwise/filter", 3},
                   .slices = OwnChannelSlices(expand + "/pointwise", false)};
    if (i + 1 < std::size(kExtras)) e.slices.push_back({Extra(i + 1) + "/reduce/filter", 2});
    std::vector<ChannelSlice> heads = HeadReaders(i + 1);
    e.slices.insert(e.slices.end(), heads.begin(), heads.end());
    groups.insert(groups.end(), {std::move(r), std::move(e)});
  }
  return groups;
}

std::vector<int64_t> SqueezeNetSsdMapSizes(int64_t image_size) {
  std::vector<int64_t> sizes = {SqueezeNetFeatureSize(image_size)};
  for (const ExtraBlock& extra : kExtras)  // a 3x3 convolution of stride 2
    sizes.push_back((sizes.back() + 2 * extra.padding - 3) / 2 + 1);
  return sizes;
}

}  // namespace dflow::models

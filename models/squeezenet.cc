// SqueezeNet 1.1; see squeezenet.h.
#include "models/squeezenet.h"

#include <string>

#include "models/layers.h"
#include "ops/ops.h"

namespace dflow::models {
namespace {

// fire2..fire9: {squeeze, expand} channels (each expand, 1x1 and 3x3, has
// `expand`); a pool before fire2, fire4 and fire6.
constexpr int64_t kFires[8][2] = {{16, 64}, {16, 64}, {32, 128}, {32, 128},
                                  {48, 192}, {48, 192}, {64, 256}, {64, 256}};
constexpr int64_t kStem = 64;
constexpr int kFire8 = 6, kFire9 = 7;  // indices into kFires: the two outputs (SqueezeNet::fire8, fire9)

std::string FireName(int i) { return "fire" + std::to_string(i + 2); }

// The output channels of `layer`: the options' count, or the published one.
int64_t Channels(const SqueezeNetOptions& options, const std::string& layer, int64_t published) {
  return LayerChannels(options.channels, layer, published);
}

// Refuses channel counts for layers the network does not have, or below 1.
void CheckChannels(const SqueezeNetOptions& options) {
  std::vector<std::string> layers{"conv1"};
  for (int i = 0; i < 8; ++i)
    for (const char* part : {"/squeeze", "/expand1x1", "/expand3x3"}) layers.push_back(FireName(i) + part);
  CheckLayerChannels(options.channels, layers, "SqueezeNet");
}

class SqueezeNetBuilder {
 public:
  SqueezeNetBuilder(SqueezeNet& net, SqueezeNetOptions options) : net_(net), options_(options) {}

  // convolution + ReLU, with batch norm between them when the options ask.
  Output Conv(const Scope& s, const Output& x, int64_t filters, int64_t k, int64_t stride,
              int64_t padding) {
    if (options_.batch_norm)
      return ConvBn(s, x, filters, k,
                    {.stride = stride, .training = options_.training, .padding = padding},
                    net_.variables, net_.batch_norm_updates);
    ConvLayer l = Conv2D(s, x, filters, k,
                         {.stride = stride, .padding = padding, .activation = Activation::kRelu});
    net_.variables.insert(net_.variables.end(), {l.filter, l.bias});
    return l.output;
  }
  // fire i: squeeze, then 1x1 and 3x3 expands side by side.
  Output Fire(const Scope& scope, const Output& x, int i) {
    const Scope s = scope.NewSubScope(FireName(i));
    auto channels = [&](const char* part, int64_t published) {
      return Channels(options_, FireName(i) + "/" + part, published);
    };
    Output h = Conv(s.NewSubScope("squeeze"), x, channels("squeeze", kFires[i][0]), 1, 1, 0);
    Output e1 = Conv(s.NewSubScope("expand1x1"), h, channels("expand1x1", kFires[i][1]), 1, 1, 0);
    Output e3 = Conv(s.NewSubScope("expand3x3"), h, channels("expand3x3", kFires[i][1]), 3, 1, 1);
    return ops::Concat(s.WithOpName("concat"), {e1, e3}, 3);
  }

 private:
  SqueezeNet& net_;
  SqueezeNetOptions options_;
};

// 3x3 stride-2 max pool rounding up: one row and column of padding after
// the image (never the maximum) keeps the last, partial window.
Output CeilMaxPool(const Scope& s, const Output& x) {
  return ops::MaxPool(s, x,
                      {.ksize = {1, 3, 3, 1},
                       .strides = {1, 2, 2, 1},
                       .padding = "EXPLICIT",
                       .explicit_paddings = {0, 0, 0, 1, 0, 1, 0, 0}});
}

}  // namespace

SqueezeNet BuildSqueezeNet(const Scope& scope, const Output& images, SqueezeNetOptions options) {
  CheckChannels(options);
  SqueezeNet net;
  SqueezeNetBuilder b(net, options);
  Output x = b.Conv(scope.NewSubScope("conv1"), images, Channels(options, "conv1", kStem), 3, 2, 0);
  for (int i = 0; i < 8; ++i) {
    if (i % 2 == 0 && i < 6)
      x = CeilMaxPool(scope.WithOpName("pool" + std::to_string(i / 2 + 1)), x);
    x = b.Fire(scope, x, i);
    if (i == kFire8) net.fire8 = x;
  }
  net.fire9 = x;
  return net;
}

int64_t SqueezeNetFeatureSize(int64_t image_size) {
  int64_t cells = (image_size - 1) / 2;                    // the stem: (S - 3) / 2 + 1
  for (int pool = 0; pool < 3; ++pool) cells = cells / 2;  // ceil((n - 3) / 2) + 1 = n / 2
  return cells;
}

std::vector<ChannelGroup> SqueezeNetChannelGroups(const SqueezeNetOptions& options, const std::string& prefix,
                                                  const std::vector<ChannelSlice>& fire8_readers,
                                                  const std::vector<ChannelSlice>& fire9_readers) {
  CheckChannels(options);
  const bool bn = options.batch_norm;
  auto group = [&](const std::string& layer, int64_t published) {
    return ChannelGroup{.layer = layer,
                        .channels = Channels(options, layer, published),
                        .importance = bn ? ChannelSlice{prefix + layer + "/gamma", 0}
                                         : ChannelSlice{prefix + layer + "/filter", 3},
                        .slices = OwnChannelSlices(prefix + layer, bn)};
  };
  auto input_of = [&](const std::string& layer) { return ChannelSlice{prefix + layer + "/filter", 2}; };
  std::vector<ChannelGroup> groups{group("conv1", kStem)};
  groups.back().slices.push_back(input_of(FireName(0) + "/squeeze"));  // through the pool
  for (int i = 0; i < 8; ++i) {
    ChannelGroup squeeze = group(FireName(i) + "/squeeze", kFires[i][0]);
    squeeze.slices.push_back(input_of(FireName(i) + "/expand1x1"));
    squeeze.slices.push_back(input_of(FireName(i) + "/expand3x3"));
    ChannelGroup e1 = group(FireName(i) + "/expand1x1", kFires[i][1]);
    ChannelGroup e3 = group(FireName(i) + "/expand3x3", kFires[i][1]);
    // What reads the concatenation [e1, e3]: the next squeeze, and past
    // fire8 and fire9 what the caller names.
    std::vector<ChannelSlice> readers = i == kFire9 ? fire9_readers : std::vector<ChannelSlice>{};
    if (i < kFire9) readers.push_back(input_of(FireName(i + 1) + "/squeeze"));
    if (i == kFire8) readers.insert(readers.end(), fire8_readers.begin(), fire8_readers.end());
    for (ChannelSlice reader : readers) {
      e1.slices.push_back(reader);
      reader.offset += e1.channels;
      e3.slices.push_back(reader);
    }
    groups.insert(groups.end(), {std::move(squeeze), std::move(e1), std::move(e3)});
  }
  return groups;
}

}  // namespace dflow::models

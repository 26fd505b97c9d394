// MobileNetV1-SSD; see mobilenet_ssd.h.
#include "models/mobilenet_ssd.h"

#include <algorithm>
#include <cmath>

#include "graph/status.h"
#include "models/layers.h"
#include "ops/ops.h"

namespace dflow::models {
namespace {

class Builder {
 public:
  Builder(MobileNetSsd& net, bool training) : net_(net), training_(training) {}

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

}  // namespace

MobileNetSsd BuildMobileNetSsd(const Scope& scope, const Output& images,
                               MobileNetSsdOptions options) {
  DFLOW_REQUIRE(options.width_multiplier > 0, "BuildMobileNetSsd: width_multiplier must be > 0, got ",
                options.width_multiplier);
  const double alpha = options.width_multiplier;
  MobileNetSsd net;
  Builder b(net, options.training);
  const Scope backbone = OnDevice(scope, options.devices.backbone);
  const Scope extra_layers = OnDevice(scope, options.devices.extras);
  const Scope heads = OnDevice(scope, options.devices.heads);
  Output x = b.ConvBn(backbone.NewSubScope("stem"), images, Thinned(32, alpha), 3, 2);
  const int64_t blocks[][2] = {{64, 1}, {128, 2}, {128, 1}, {256, 2}, {256, 1}, {512, 2},
                               {512, 1}, {512, 1}, {512, 1}, {512, 1}, {512, 1},
                               {1024, 2}, {1024, 1}};
  for (int i = 0; i < 13; ++i) {
    x = b.ConvDw(backbone.NewSubScope("block" + std::to_string(i + 1)), x, Thinned(blocks[i][0], alpha),
                 blocks[i][1]);
    if (i == 10 || i == 12) net.features.push_back(x);  // 19x19x512 and 10x10x1024
  }
  net.backbone_variables = net.variables;
  const int64_t extras[][2] = {{256, 512}, {128, 256}, {128, 256}, {128, 256}};
  for (int i = 0; i < 4; ++i) {
    Scope s = extra_layers.NewSubScope("extra" + std::to_string(i + 1));
    x = b.Conv(s.NewSubScope("reduce"), x, Thinned(extras[i][0], alpha), 1, 1, 0, Activation::kRelu);
    x = b.Conv(s.NewSubScope("expand"), x, Thinned(extras[i][1], alpha), 3, 2, 1, Activation::kRelu);
    net.features.push_back(x);
  }
  std::vector<Input> boxes, classes;
  for (size_t i = 0; i < net.features.size(); ++i) {
    Scope s = heads.NewSubScope("head" + std::to_string(i + 1));
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

}  // namespace dflow::models

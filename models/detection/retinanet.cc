// RetinaNet on ResNet + FPN; see retinanet.h.
#include "models/detection/retinanet.h"

#include <cmath>
#include <string>

#include "graph/status.h"
#include "models/detection/box_coding.h"
#include "models/layers.h"
#include "models/resnet.h"
#include "ops/ops.h"

namespace dflow::models::detection {
namespace {

constexpr int64_t kChannels = 256;       // FPN and head width
constexpr int64_t kAnchorsPerCell = 9;   // 3 ratios x 3 scales
constexpr double kPrior = 0.01;          // pi: every class's probability at the start
constexpr double kHeadStddev = 0.01;     // the heads' weights ~ N(0, 0.01^2)

constexpr char kBackbone[] = "resnet/";
constexpr const char* kSubnets[] = {"class_head", "box_head"};
constexpr size_t kSubnetLayers = 4;

// "p4", "conv1", ...: appended, since g++ 12 warns (-Wrestrict) on some
// inlined "literal" + std::string.
std::string Numbered(std::string prefix, size_t n) {
  prefix += std::to_string(n);
  return prefix;
}

// Splits the options' channel counts: the backbone's go to its options
// (without the "resnet/" prefix); the others must be subnet layers.
ResNetOptions BackboneOptions(const RetinaNetOptions& options) {
  std::map<std::string, int64_t> subnets;
  ResNetOptions backbone{.depth = options.depth,
                         .training = options.training,
                         .channels = ChannelsUnder(options.channels, kBackbone, subnets)};
  std::vector<std::string> layers;
  for (const char* subnet : kSubnets)
    for (size_t i = 1; i <= kSubnetLayers; ++i) layers.push_back(Numbered(std::string(subnet) + "/conv", i));
  CheckLayerChannels(subnets, layers, "RetinaNet");
  return backbone;
}

// A subnet layer's channels: the options' count, or 256.
int64_t SubnetChannels(const RetinaNetOptions& options, const std::string& layer) {
  return LayerChannels(options.channels, layer, kChannels);
}

void CheckOptions(const RetinaNetOptions& options) {
  DFLOW_REQUIRE(options.num_classes >= 1, "RetinaNet: num_classes must be >= 1, got ",
                options.num_classes);
  DFLOW_REQUIRE(options.image_size >= 32, "RetinaNet: image_size must be >= 32, got ",
                options.image_size);
  DFLOW_REQUIRE(options.depth == 18 || options.depth == 50,
                "RetinaNet: depth must be 18 or 50, got ", options.depth);
  const RetinaNetAnchorOptions& a = options.anchors;
  DFLOW_REQUIRE(a.min_level == 3 && a.max_level == 7,
                "RetinaNet: anchor levels must be 3..7 (P3-P7), got ", a.min_level, "..",
                a.max_level);
  DFLOW_REQUIRE(a.normalized,
                "RetinaNet: anchors must be normalized (the network's coordinates)");
  DFLOW_REQUIRE(a.scales.size() * a.ratios.size() == kAnchorsPerCell,
                "RetinaNet: the heads predict 9 anchors per cell, got ", a.scales.size(),
                " scales x ", a.ratios.size(), " ratios");
}

// [0, 1] pixels -> ImageNet's normalisation, (x - mean) / std per channel.
Output Normalize(const Scope& s, const Output& images) {
  Output mean = ops::Const(s, Tensor::FromVector<float>({0.485f, 0.456f, 0.406f}));
  Output stddev = ops::Const(s, Tensor::FromVector<float>({0.229f, 0.224f, 0.225f}));
  return ops::Div(s, ops::Sub(s, images, mean), stddev);
}

class RetinaNetBuilder {
 public:
  RetinaNetBuilder(std::vector<Output>& variables, const RetinaNetOptions& options)
      : variables_(variables), options_(options) {}

  Output Conv(const Scope& s, const Output& x, int64_t k, int64_t stride) {
    ConvLayer l = Conv2D(s, x, kChannels, k, {.stride = stride, .padding = k / 2});
    variables_.insert(variables_.end(), {l.filter, l.bias});
    return l.output;
  }

  // FPN (Lin et al. 2017, "Feature Pyramid Networks"): P3..P7 from C3..C5.
  std::vector<Output> Pyramid(const Scope& s, const std::vector<Output>& c, bool p6_from_p5) {
    std::vector<Output> lateral;
    for (size_t i = 0; i < c.size(); ++i)
      lateral.push_back(Conv(s.NewSubScope(Numbered("lateral", i + 3)), c[i], 1, 1));
    // Top-down: each coarser map upsampled (nearest, to the finer map's size,
    // PyTorch's F.interpolate rule) and added, from P5 down to P3.
    for (size_t i = c.size() - 1; i > 0; --i) {
      const Shape& fine = lateral[i - 1].shape();
      Output size = ops::Const(s, Tensor::FromVector<int32_t>(
                                      {static_cast<int32_t>(fine.dim(1)),
                                       static_cast<int32_t>(fine.dim(2))}));
      Output up = ops::ResizeNearestNeighbor(s, lateral[i], size, {.half_pixel_centers = false});
      lateral[i - 1] = ops::Add(s, lateral[i - 1], up);
    }
    std::vector<Output> p;
    for (size_t i = 0; i < c.size(); ++i)
      p.push_back(Conv(s.NewSubScope(Numbered("output", i + 3)), lateral[i], 3, 1));
    p.push_back(Conv(s.NewSubScope("p6"), p6_from_p5 ? p.back() : c.back(), 3, 2));
    p.push_back(Conv(s.NewSubScope("p7"), ops::Relu(s, p.back()), 3, 2));
    return p;
  }

  // One 3x3 head layer over every level: its weights made at P3 (under `s`)
  // and applied with the same variables at P4..P7 (under s/p4 ...).
  std::vector<Output> SharedConv(const Scope& s, const std::vector<Output>& levels,
                                 int64_t filters, ConvOptions options) {
    ConvLayer layer = Conv2D(s, levels[0], filters, 3, options);
    variables_.insert(variables_.end(), {layer.filter, layer.bias});
    std::vector<Output> out = {layer.output};
    for (size_t l = 1; l < levels.size(); ++l)
      out.push_back(ApplyConv2D(s.NewSubScope(Numbered("p", l + 3)), levels[l], layer, options));
    return out;
  }

  // A subnet (section 4): 4 x (3x3 conv + ReLU), then a 3x3 conv to
  // 9 * k outputs per cell, reshaped to [N, cells * 9, k] and joined over
  // the levels in the anchors' order.
  Output Head(const Scope& s, const std::string& name, std::vector<Output> levels, int64_t k, double final_bias) {
    for (size_t i = 1; i <= kSubnetLayers; ++i)
      levels = SharedConv(s.NewSubScope(Numbered("conv", i)), levels,
                          SubnetChannels(options_, Numbered(name + "/conv", i)),
                          {.padding = 1, .activation = Activation::kRelu, .stddev = kHeadStddev});
    levels = SharedConv(s.NewSubScope("predict"), levels, kAnchorsPerCell * k,
                        {.padding = 1, .stddev = kHeadStddev, .bias_value = final_bias});
    std::vector<Input> flat;
    for (const Output& level : levels) {
      const Shape& shape = level.shape();
      flat.push_back(ops::Reshape(s, level, {int64_t{-1},
                                             shape.dim(1) * shape.dim(2) * kAnchorsPerCell, k}));
    }
    return ops::Concat(s, flat, 1);
  }

 private:
  std::vector<Output>& variables_;
  const RetinaNetOptions& options_;
};

// The levels the graph built must have the cells the anchors assume.
void CheckLevels(const std::vector<Output>& levels, int64_t image_size) {
  for (size_t i = 0; i < levels.size(); ++i) {
    const int64_t stride = int64_t{1} << (i + 3);
    const int64_t cells = (image_size + stride - 1) / stride;
    const Shape& shape = levels[i].shape();
    DFLOW_REQUIRE(shape.dim(1) == cells && shape.dim(2) == cells, "RetinaNet: P", i + 3, " is ",
                  shape.ToString(), ", expected ", cells, "x", cells, " cells");
  }
}

}  // namespace

Tensor RetinaNetDefaultAnchors(const RetinaNetOptions& options) {
  CheckOptions(options);
  return RetinaNetAnchors(options.image_size, options.image_size, options.anchors);
}

RetinaNetNetwork BuildRetinaNetNetwork(const Scope& scope, const RetinaNetOptions& options) {
  CheckOptions(options);  // before the placeholder is added
  const int64_t size = options.image_size;
  return BuildRetinaNetNetwork(
      scope, options, ops::Placeholder(scope.WithOpName("images"), DType::kFloat32, {-1, size, size, 3}));
}

RetinaNetNetwork BuildRetinaNetNetwork(const Scope& scope, const RetinaNetOptions& options,
                                       const Output& images) {
  CheckOptions(options);
  Scope s = scope.NewSubScope("retinanet");
  RetinaNetNetwork net;
  net.options = options;
  const int64_t size = options.image_size;
  net.images = images;
  const Scope on_backbone = OnDevice(s, options.devices.backbone);
  const Scope on_heads = OnDevice(s, options.devices.heads);
  ResNet backbone = BuildResNet(on_backbone, Normalize(on_backbone, net.images), BackboneOptions(options));
  net.variables = backbone.variables;
  net.backbone_variables = backbone.variables;
  net.batch_norm_updates = backbone.batch_norm_updates;
  net.backbone_features = backbone.features.back();
  RetinaNetBuilder b(net.variables, options);
  std::vector<Output> levels =
      b.Pyramid(OnDevice(s, options.devices.extras).NewSubScope("fpn"), backbone.features, options.p6_from_p5);
  CheckLevels(levels, size);
  net.feature_maps = levels;
  // The class bias makes every sigmoid start at the prior pi, so the many
  // background anchors do not swamp the first steps' loss (section 4.1).
  const double prior_bias = -std::log((1 - kPrior) / kPrior);
  Output logits = b.Head(on_heads.NewSubScope(kSubnets[0]), kSubnets[0], levels, options.num_classes, prior_bias);
  Output deltas = b.Head(on_heads.NewSubScope(kSubnets[1]), kSubnets[1], levels, 4, 0.0);
  net.class_logits = ops::Identity(on_heads.WithOpName("class_logits"), logits);
  net.box_deltas = ops::Identity(on_heads.WithOpName("box_deltas"), deltas);
  net.anchors = RetinaNetDefaultAnchors(options);
  return net;
}

std::vector<ChannelGroup> RetinaNetChannelGroups(const RetinaNetOptions& options) {
  CheckOptions(options);
  std::vector<ChannelGroup> groups = ResNetChannelGroups(BackboneOptions(options), "");
  for (ChannelGroup& g : groups) g.layer = kBackbone + g.layer;
  for (const std::string subnet : kSubnets)
    for (size_t i = 1; i <= kSubnetLayers; ++i) {
      const std::string layer = Numbered(subnet + "/conv", i);
      ChannelGroup g{.layer = layer,
                     .channels = SubnetChannels(options, layer),
                     .importance = {layer + "/filter", 3},
                     .slices = OwnChannelSlices(layer, false)};
      g.slices.push_back({(i < kSubnetLayers ? Numbered(subnet + "/conv", i + 1) : subnet + "/predict") + "/filter", 2});
      groups.push_back(std::move(g));
    }
  // BuildRetinaNetNetwork builds the network under "retinanet".
  PrefixVariables(groups, "retinanet/");
  return groups;
}

RetinaNetLoss BuildRetinaNetLoss(const Scope& scope, const RetinaNetNetwork& net,
                                 RetinaNetLossOptions options) {
  Scope s = scope.NewSubScope("retinanet_loss");
  DetectionTargets targets = DetectionTargetPlaceholders(scope, s, net.anchors.shape().dim(0));
  RetinaNetLoss loss;
  loss.box_targets = targets.box_targets;
  loss.class_targets = targets.class_targets;
  loss.box_loss = ops::Div(s.WithOpName("box_loss"),
                           SmoothL1Loss(s, net.box_deltas, loss.box_targets, targets.positive,
                                        options.smooth_l1_beta),
                           targets.num_positive);
  // Label l is column l - 1 of the K sigmoids; background (0) and ignored
  // (-1) fall outside and give all-zero rows; the ignored weigh 0.
  Output one_hot = ops::OneHot(s, ops::Sub(s, loss.class_targets, 1),
                               ops::Const(s, static_cast<int32_t>(net.options.num_classes)), 1.0f,
                               0.0f);
  Output counted = ops::Cast(s, ops::GreaterEqual(s, loss.class_targets, 0), DType::kFloat32);
  loss.class_loss = ops::Identity(
      s.WithOpName("class_loss"),
      SigmoidFocalLoss(s, net.class_logits, one_hot, counted, targets.num_positive,
                       options.focal));
  loss.loss = ops::Add(s.WithOpName("loss"), loss.box_loss, loss.class_loss);
  return loss;
}

Detections BuildRetinaNetPostprocess(const Scope& scope, const RetinaNetNetwork& net,
                                     NmsOptions options) {
  Scope s = scope.NewSubScope("retinanet_postprocess");
  Output anchors = ops::Const(s.WithOpName("anchors"), net.anchors);
  Output boxes = DecodeBoxes(s, net.box_deltas, anchors, kUnitVariances);  // [N, A, 4]
  return BuildDetections(s, scope, boxes, ops::Sigmoid(s, net.class_logits), options);
}

}  // namespace dflow::models::detection

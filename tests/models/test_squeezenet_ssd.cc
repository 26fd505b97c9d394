// SqueezeNet-SSD: the backbone has SqueezeNet 1.1's parameters,
// the default boxes follow its feature maps for any input size, and fitted
// to one image the loss falls and the post-processing finds the object.
#include <catch2/catch.hpp>

#include "models/detection/ssd.h"
#include "models/layers.h"
#include "models/squeezenet.h"
#include "ops/ops.h"
#include "tests/models/ssd_fit_util.h"

using namespace dflow;
using namespace dflow::models::detection;

namespace {

// Anchors per input size, the maps traced layer by layer: the stem
// (3x3, stride 2, no padding), three 3x3 stride-2 pools rounding up, then
// the extras (3x3 stride 2, padding 2 on the first, 1 after); 6 boxes a cell.
int64_t SqueezeNetSsdAnchors(int64_t size) {
  int64_t f = (size - 3) / 2 + 1;
  for (int pool = 0; pool < 3; ++pool) f = (f - 3 + 1) / 2 + 1;  // ceil((f - 3) / 2) + 1
  int64_t total = f * f * 6;
  for (int extra = 0; extra < 5; ++extra) {
    f = (f + 2 * (extra == 0 ? 2 : 1) - 3) / 2 + 1;
    total += f * f * 6;
  }
  return total;
}

SsdOptions SqueezeNetSsd(int64_t num_classes, int64_t size) {
  return {.backbone = SsdBackbone::kSqueezeNet, .num_classes = num_classes, .image_size = size};
}

}  // namespace

TEST_CASE("SqueezeNet-SSD: default boxes follow the feature maps of any input size",
          "[squeezenet_ssd]") {
  for (int64_t size = 64; size <= 300; size += 59) {
    Scope scope = Scope::NewRootScope();
    SsdNetwork net = BuildSsdNetwork(scope, SqueezeNetSsd(3, size));  // checks the maps
    INFO("size " << size);
    CHECK(net.anchors.shape() == Shape{SqueezeNetSsdAnchors(size), 4});
    CHECK(SsdDefaultBoxes(SqueezeNetSsd(3, size)).shape() == net.anchors.shape());
    CHECK(net.box_deltas.shape().dim(1) == SqueezeNetSsdAnchors(size));
    CHECK(net.class_logits.shape().dim(2) == 4);
    CHECK(net.backbone_variables.size() < net.variables.size());
  }
  // The reference's priors at 300 (squeezenet_ssd_config.py).
  CHECK(SqueezeNetSsdAnchors(300) == 6 * (18 * 18 + 10 * 10 + 5 * 5 + 3 * 3 + 2 * 2 + 1));
}

TEST_CASE("SqueezeNet-SSD: the width multiplier is refused", "[squeezenet_ssd]") {
  Scope scope = Scope::NewRootScope();
  SsdOptions options = SqueezeNetSsd(3, 64);
  options.width_multiplier = 0.5;
  CHECK_THROWS_WITH(BuildSsdNetwork(scope, options),
                    Catch::Contains("SqueezeNet takes 1, got 0.5"));
}

TEST_CASE("SqueezeNet 1.1: the published parameter count, without the classifier",
          "[squeezenet_ssd]") {
  Scope scope = Scope::NewRootScope();
  Output images = ops::Placeholder(scope, DType::kFloat32, {-1, 224, 224, 3});
  // torchvision's squeezenet1_1: 1,235,496 parameters, of which the
  // classifier (a 1x1 convolution 512 -> 1000) holds 513,000.
  models::SqueezeNet plain = models::BuildSqueezeNet(scope.NewSubScope("plain"), images,
                                                     {.batch_norm = false});
  CHECK(models::CountParameters(plain.variables) == 1235496 - 513000);
  CHECK(plain.fire9.shape() == Shape{-1, 13, 13, 512});
  // With batch norm each convolution's bias becomes a gamma and a beta:
  // one more parameter per output channel, 2,944 channels in all.
  models::SqueezeNet bn = models::BuildSqueezeNet(scope.NewSubScope("bn"), images);
  CHECK(models::CountParameters(bn.variables) == 1235496 - 513000 + 2944);
}

TEST_CASE("SqueezeNet-SSD: fitted to one image, the loss falls and NMS returns the object",
          "[squeezenet_ssd]") {
  testing::CheckSsdFitsOneImage({.backbone = SsdBackbone::kSqueezeNet});
}

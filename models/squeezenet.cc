// SqueezeNet 1.1; see squeezenet.h.
#include "models/squeezenet.h"

#include <string>

#include "models/layers.h"
#include "ops/ops.h"

namespace dflow::models {
namespace {

class Builder {
 public:
  Builder(SqueezeNet& net, SqueezeNetOptions options) : net_(net), options_(options) {}

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
  // squeeze to `squeeze` channels, then 1x1 and 3x3 expands side by side.
  Output Fire(const Scope& s, const Output& x, int64_t squeeze, int64_t expand) {
    Output h = Conv(s.NewSubScope("squeeze"), x, squeeze, 1, 1, 0);
    Output e1 = Conv(s.NewSubScope("expand1x1"), h, expand, 1, 1, 0);
    Output e3 = Conv(s.NewSubScope("expand3x3"), h, expand, 3, 1, 1);
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
  SqueezeNet net;
  Builder b(net, options);
  Output x = b.Conv(scope.NewSubScope("conv1"), images, 64, 3, 2, 0);
  // fire2..fire9 (squeeze, expand); a pool before fire2, fire4 and fire6.
  const int64_t fires[][2] = {{16, 64},  {16, 64},  {32, 128}, {32, 128},
                              {48, 192}, {48, 192}, {64, 256}, {64, 256}};
  for (int i = 0; i < 8; ++i) {
    if (i % 2 == 0 && i < 6)
      x = CeilMaxPool(scope.WithOpName("pool" + std::to_string(i / 2 + 1)), x);
    x = b.Fire(scope.NewSubScope("fire" + std::to_string(i + 2)), x, fires[i][0], fires[i][1]);
    if (i == 6) net.fire8 = x;
  }
  net.fire9 = x;
  return net;
}

int64_t SqueezeNetFeatureSize(int64_t image_size) {
  int64_t cells = (image_size - 1) / 2;                    // the stem: (S - 3) / 2 + 1
  for (int pool = 0; pool < 3; ++pool) cells = cells / 2;  // ceil((n - 3) / 2) + 1 = n / 2
  return cells;
}

}  // namespace dflow::models

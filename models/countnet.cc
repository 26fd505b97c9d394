// CountNet; see countnet.h.
#include "models/countnet.h"

#include "models/layers.h"
#include "ops/ops.h"

namespace dflow::models {
namespace {

struct ColumnSpec {
  int64_t k1, k2, c1, c2;
};

// conv(k1, c1) pool conv(k2, c2) pool conv(k2, c1) conv(k2, c1/2), then two
// ConvTranspose(k2, stride 2, padding k2/2, output_padding 1): x4 in size.
Output Column(const Scope& s, const Output& x, const ColumnSpec& c, std::vector<Output>& vars) {
  auto conv = [&](const std::string& name, const Output& in, int64_t filters, int64_t k) {
    ConvLayer l = Conv2D(s.NewSubScope(name), in, filters, k, {.activation = Activation::kRelu});
    vars.insert(vars.end(), {l.filter, l.bias});
    return l.output;
  };
  auto up = [&](const std::string& name, const Output& in, int64_t filters) {
    ConvLayer l = Conv2DTranspose(s.NewSubScope(name), in, filters, c.k2,
                                  {.stride = 2, .padding = c.k2 / 2, .output_padding = 1,
                                   .activation = Activation::kRelu});
    vars.insert(vars.end(), {l.filter, l.bias});
    return l.output;
  };
  ops::PoolWindow pool{{1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"};
  Output h = conv("conv1", x, c.c1, c.k1);
  h = conv("conv2", ops::MaxPool(s.WithOpName("pool1"), h, pool), c.c2, c.k2);
  h = conv("conv3", ops::MaxPool(s.WithOpName("pool2"), h, pool), c.c1, c.k2);
  h = conv("conv4", h, c.c1 / 2, c.k2);
  h = up("up1", h, c.c1 / 2);
  return up("up2", h, c.c1);
}

}  // namespace

CountNet BuildCountNet(const Scope& scope, const Output& images) {
  CountNet net;
  std::vector<Input> columns;
  const ColumnSpec specs[] = {{9, 7, 16, 32}, {7, 5, 20, 40}, {5, 3, 24, 48}};
  for (int i = 0; i < 3; ++i)
    columns.push_back(Column(scope.NewSubScope("column" + std::to_string(i + 1)), images, specs[i],
                             net.variables));
  Output joined = ops::Concat(scope.WithOpName("concat"), columns, 3);
  ConvLayer final = Conv2D(scope.NewSubScope("density"), joined, 1, 1);
  net.variables.insert(net.variables.end(), {final.filter, final.bias});
  net.density = final.output;
  return net;
}

Output CountLoss(const Scope& scope, const Output& density, const Output& target) {
  Scope s = scope.NewSubScope("count_loss");
  Output per_image = ops::Sqrt(s, ops::Sum(s, ops::SquaredDifference(s, density, target), {1, 2, 3}));
  return ops::Mean(s.WithOpName("loss"), per_image, 0);
}

}  // namespace dflow::models

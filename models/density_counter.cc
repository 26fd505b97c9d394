// The counting model; see density_counter.h.
#include "models/density_counter.h"

#include <algorithm>
#include <cstring>

#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "models/countnet.h"
#include "models/data/tiler.h"
#include "ops/ops.h"

namespace dflow::models {

DensityCounter BuildDensityCounter(const Scope& s, const DensityCounterOptions& options) {
  DFLOW_REQUIRE(options.tile_size > 0 && options.tile_size % 4 == 0,
                "BuildDensityCounter: tile_size must be a positive multiple of 4, got ",
                options.tile_size);
  DFLOW_REQUIRE(options.density_scale > 0, "BuildDensityCounter: density_scale must be > 0, got ",
                options.density_scale);
  DFLOW_REQUIRE(!(options.fed_gradients && options.external_optimizer),
                "BuildDensityCounter: fed_gradients and external_optimizer exclude each other");
  DensityCounter m;
  m.tile_size = options.tile_size;
  int64_t t = options.tile_size;
  m.images = ops::Placeholder(s.WithOpName("images"), DType::kFloat32, {-1, t, t, 3});
  m.target = ops::Placeholder(s.WithOpName("target"), DType::kFloat32, {-1, t, t, 1});
  CountNet net = BuildCountNet(s.NewSubScope("countnet"), m.images);
  m.variables = net.variables;
  // The network learns density * scale (see DensityCounterOptions). The
  // scale is a variable outside the trained list, so every checkpoint
  // carries the scale its weights were trained with.
  m.density_scale = ops::Variable(s.WithOpName("density_scale"),
                                  Tensor::Scalar(static_cast<float>(options.density_scale)));
  m.density = ops::Div(s.WithOpName("density"), net.density, m.density_scale);
  m.counts = ops::Sum(s.WithOpName("counts"), m.density, {1, 2, 3});
  m.loss = CountLoss(s, net.density, ops::Mul(s.WithOpName("scaled_target"), m.target,
                                                m.density_scale));
  m.global_step = autodiff::GetOrCreateGlobalStep(s);
  m.learning_rate = options.decay_steps > 0
                  ? autodiff::CosineDecay(s, options.learning_rate, m.global_step,
                                          {.decay_steps = options.decay_steps, .alpha = 0.05})
                  : autodiff::ConstantLearningRate(s, options.learning_rate);
  if (options.external_optimizer) return m;
  autodiff::AdamOptimizer adam(m.learning_rate);
  if (!options.fed_gradients) {
    m.train = adam.Minimize(s, m.loss, m.variables);
  } else {
    autodiff::FedGradients fed = adam.MinimizeWithFedGradients(s, m.loss, m.variables);
    m.gradients = fed.gradients;
    m.gradient_feeds = fed.feeds;
    m.train = fed.apply;
  }
  m.init = ops::GlobalVariablesInitializer(s.WithOpName("init"));
  return m;
}

std::vector<std::string> DensityCounter::ModelVariableNames() const {
  std::vector<std::string> names{density_scale.node()->name()};
  for (const Output& v : variables) names.push_back(v.node()->name());
  return names;
}

Tensor ToUnitFloat(const Tensor& image) {
  DFLOW_REQUIRE(image.dtype() == DType::kUInt8 && image.rank() == 3,
                "expected a uint8 [H, W, C] image, got ", image.SummaryString());
  Tensor out(DType::kFloat32, image.shape());
  const uint8_t* in = image.data<uint8_t>();
  float* o = out.data<float>();
  for (int64_t i = 0; i < image.NumElements(); ++i) o[i] = static_cast<float>(in[i]) * (1.0f / 255);
  return out;
}

Tensor PredictDensity(Session& session, const DensityCounter& model, const Tensor& image,
                      int64_t batch) {
  DFLOW_REQUIRE(image.dtype() == DType::kUInt8 && image.rank() == 3 && image.dim(2) == 3,
                "PredictDensity: expected a uint8 [H, W, 3] image, got ", image.SummaryString());
  DFLOW_REQUIRE(batch > 0, "PredictDensity: batch must be positive, got ", batch);
  int64_t t = model.tile_size, h = image.dim(0), w = image.dim(1);
  std::vector<TileSpec> tiles = CoveringTiles(h, w, t);
  std::vector<Tensor> maps;
  size_t pixels = static_cast<size_t>(t * t);
  for (size_t first = 0; first < tiles.size(); first += static_cast<size_t>(batch)) {
    size_t n = std::min(tiles.size() - first, static_cast<size_t>(batch));
    Tensor input(DType::kFloat32, Shape{static_cast<int64_t>(n), t, t, 3});
    for (size_t i = 0; i < n; ++i) {
      Tensor tile = ToUnitFloat(CropTile(image, tiles[first + i], t));
      std::memcpy(input.data<float>() + i * pixels * 3, tile.data<float>(), pixels * 3 * sizeof(float));
    }
    Tensor density = session.Run({{model.images, input}}, {model.density})[0];
    for (size_t i = 0; i < n; ++i) {
      Tensor map(DType::kFloat32, Shape{t, t});
      std::memcpy(map.data<float>(), density.data<float>() + i * pixels, pixels * sizeof(float));
      maps.push_back(std::move(map));
    }
  }
  return StitchTiles(maps, tiles, h, w);
}

}  // namespace dflow::models

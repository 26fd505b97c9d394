// The counting model: training lowers the seed's loss, prediction on images
// of any size equals running the tiles one by one, and the density scale
// travels with the checkpoint.
#include <catch2/catch.hpp>

#include <cstring>

#include "autodiff/optimizers.h"
#include "graph/session.h"
#include "models/checkpoint.h"
#include "models/data/tiler.h"
#include "models/density_counter.h"
#include "models/layers.h"
#include "ops/ops.h"
#include "tests/models/checkpoint_test_util.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::models;

namespace {

Tensor RandomImage(int64_t h, int64_t w, uint64_t seed) {
  Tensor values = testing::RandomTensor(DType::kFloat32, {h, w, 3}, seed, 0, 255);
  Tensor image(DType::kUInt8, Shape{h, w, 3});
  for (int64_t i = 0; i < image.NumElements(); ++i)
    image.data<uint8_t>()[i] = static_cast<uint8_t>(values.data<float>()[i]);
  return image;
}

struct Fixture {
  Scope scope = Scope::NewRootScope();
  DensityCounter model;
  std::unique_ptr<Session> session;
  explicit Fixture(double density_scale = 100, bool fed_gradients = false) {
    scope.graph().set_seed(5);
    model = BuildDensityCounter(scope, {.tile_size = 16, .learning_rate = 1e-2,
                                        .density_scale = density_scale, .fed_gradients = fed_gradients});
    session = std::make_unique<Session>(scope, SessionOptions{.num_threads = 1});
    session->Run({}, {}, {model.init});
  }
};

}  // namespace

TEST_CASE("DensityCounter: a few Adam steps lower the loss; counts sum the maps", "[density_counter]") {
  Fixture f;
  CHECK(CountParameters(f.model.variables) == 154621);  // the density scale is not trained
  Tensor images = ToUnitFloat(RandomImage(32, 16, 1)).Reshaped(Shape{2, 16, 16, 3});
  Tensor target = Tensor::Zeros(DType::kFloat32, Shape{2, 16, 16, 1});
  target.data<float>()[5 * 16 + 7] = 1;  // one object in the first tile
  FeedList feeds = {{f.model.images, images}, {f.model.target, target}};
  float before = f.session->Run(feeds, {f.model.loss})[0].scalar<float>();
  for (int i = 0; i < 10; ++i) f.session->Run(feeds, {}, {f.model.train});
  auto out = f.session->Run(feeds, {f.model.loss, f.model.density, f.model.counts});
  CHECK(out[0].scalar<float>() < before);
  for (int n = 0; n < 2; ++n) {
    double sum = 0;
    for (int64_t i = 0; i < 256; ++i) sum += out[1].data<float>()[n * 256 + i];
    CHECK(out[2].data<float>()[n] == Approx(sum).epsilon(1e-4).margin(1e-4));
  }
  CHECK(f.session->Run({f.model.global_step})[0].scalar<int64_t>() == 10);
}

TEST_CASE("PredictDensity tiles, batches and stitches an image of any size", "[density_counter]") {
  Fixture f;
  Tensor image = RandomImage(37, 21, 2);  // 3 x 2 tiles of 16, the last ones overlapping
  Tensor stitched = PredictDensity(*f.session, f.model, image, /*batch=*/4);
  REQUIRE(stitched.shape() == Shape{37, 21});
  // Every pixel comes from the last tile covering it, run on its own.
  std::vector<float> expected(37 * 21, -1);
  for (const TileSpec& tile : CoveringTiles(37, 21, 16)) {
    Tensor one = ToUnitFloat(CropTile(image, tile, 16)).Reshaped(Shape{1, 16, 16, 3});
    Tensor map = f.session->Run({{f.model.images, one}}, {f.model.density})[0];
    for (int64_t r = 0; r < 16 && tile.top + r < 37; ++r)
      for (int64_t c = 0; c < 16 && tile.left + c < 21; ++c)
        expected[(tile.top + r) * 21 + tile.left + c] = map.data<float>()[r * 16 + c];
  }
  for (int64_t i = 0; i < 37 * 21; ++i)
    REQUIRE(stitched.data<float>()[i] == Approx(expected[i]).margin(1e-6));
  CHECK_THROWS_AS(PredictDensity(*f.session, f.model, Tensor(DType::kFloat32, Shape{4, 4, 3})),
                  Error);
}

TEST_CASE("The density scale is saved with the weights", "[density_counter]") {
  testing::ScratchDir dir("density_counter");
  Fixture trained(/*density_scale=*/50);
  Tensor image = RandomImage(16, 16, 3);
  Tensor expected = PredictDensity(*trained.session, trained.model, image);
  std::string path = Saver(trained.scope).Save(*trained.session, dir.path().string() + "/", 1);

  Fixture fresh(/*density_scale=*/100);  // as eval would build it
  RestoreOptions only;
  only.only = fresh.model.ModelVariableNames();
  Saver(fresh.scope).Restore(*fresh.session, path, only);
  Tensor again = PredictDensity(*fresh.session, fresh.model, image);
  CHECK(std::memcmp(again.raw_data(), expected.raw_data(), expected.TotalBytes()) == 0);
}

TEST_CASE("BuildDensityCounter refuses a tile size that is not a multiple of 4", "[density_counter]") {
  Scope s = Scope::NewRootScope();
  CHECK_THROWS_AS(BuildDensityCounter(s, {.tile_size = 30}), Error);
}

TEST_CASE("DensityCounter with fed gradients: fetching them and feeding them back is the same Adam step",
          "[density_counter]") {
  Fixture direct(100, false), fed(100, true);
  REQUIRE(direct.model.gradients.empty());
  REQUIRE(fed.model.gradients.size() == fed.model.variables.size());
  REQUIRE(fed.model.gradient_feeds.size() == fed.model.variables.size());
  Tensor images = ToUnitFloat(RandomImage(32, 16, 2)).Reshaped(Shape{2, 16, 16, 3});
  Tensor target = Tensor::Zeros(DType::kFloat32, Shape{2, 16, 16, 1});
  target.data<float>()[3 * 16 + 9] = 1;
  for (int step = 0; step < 3; ++step) {
    direct.session->Run({{direct.model.images, images}, {direct.model.target, target}}, {}, {direct.model.train});
    std::vector<TensorName> fetches(fed.model.gradients.begin(), fed.model.gradients.end());
    std::vector<Tensor> grads = fed.session->Run({{fed.model.images, images}, {fed.model.target, target}}, fetches);
    FeedList feeds;
    for (size_t v = 0; v < grads.size(); ++v) feeds.push_back({fed.model.gradient_feeds[v], grads[v]});
    fed.session->Run(feeds, {}, {fed.model.train});
  }
  for (size_t v = 0; v < direct.model.variables.size(); ++v) {
    INFO(direct.model.variables[v].node()->name());
    CHECK(direct.session->Run({direct.model.variables[v]})[0].Equals(fed.session->Run({fed.model.variables[v]})[0]));
  }
  CHECK(fed.session->Run({fed.model.global_step})[0].scalar<int64_t>() == 3);
}

TEST_CASE("DensityCounter with an external optimizer: the caller's Adam on its learning rate is the same step",
          "[density_counter]") {
  Fixture direct(100, false);
  Scope scope = Scope::NewRootScope();
  scope.graph().set_seed(5);
  DensityCounter model = BuildDensityCounter(scope, {.tile_size = 16, .learning_rate = 1e-2,
                                                     .density_scale = 100, .external_optimizer = true});
  CHECK(model.train == nullptr);
  CHECK(model.init == nullptr);
  // What dist::PsWorker adds: Adam's update from ComputeGradients, then the initialiser.
  autodiff::AdamOptimizer adam(model.learning_rate);
  Node* train = adam.ApplyGradients(scope, adam.ComputeGradients(scope, model.loss, model.variables));
  Node* init = ops::GlobalVariablesInitializer(scope.WithOpName("init"));
  Session session(scope, SessionOptions{.num_threads = 1});
  session.Run({}, {}, {init});
  Tensor images = ToUnitFloat(RandomImage(32, 16, 4)).Reshaped(Shape{2, 16, 16, 3});
  Tensor target = Tensor::Zeros(DType::kFloat32, Shape{2, 16, 16, 1});
  target.data<float>()[5 * 16 + 2] = 1;
  for (int step = 0; step < 3; ++step) {
    direct.session->Run({{direct.model.images, images}, {direct.model.target, target}}, {}, {direct.model.train});
    session.Run({{model.images, images}, {model.target, target}}, {}, {train});
  }
  for (size_t v = 0; v < model.variables.size(); ++v) {
    INFO(model.variables[v].node()->name());
    CHECK(direct.session->Run({direct.model.variables[v]})[0].Equals(session.Run({model.variables[v]})[0]));
  }
}

TEST_CASE("BuildDensityCounter refuses fed_gradients with external_optimizer", "[density_counter]") {
  Scope s = Scope::NewRootScope();
  CHECK_THROWS_WITH(BuildDensityCounter(s, {.tile_size = 16, .fed_gradients = true, .external_optimizer = true}),
                    Catch::Contains("fed_gradients and external_optimizer exclude each other"));
}

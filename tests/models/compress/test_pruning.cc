// Pruning (models/compress/pruning.h): L1 unstructured masks per layer and
// global prune exactly the smallest weights; channel choice keeps the most
// important channels; removing channels from MobileNet-SSD, SqueezeNet-SSD
// (concatenations cut at their parts' offsets) and RetinaNet rebuilds a
// thinner network that computes exactly what the wide one did when the
// removed channels were dead (their outputs zero); misuse is named.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <random>

#include "graph/session.h"
#include "models/checkpoint.h"
#include "models/compress/pruning.h"
#include "models/detection/retinanet.h"
#include "models/mobilenet_ssd.h"
#include "models/squeezenet_ssd.h"
#include "models/safetensors.h"
#include "ops/ops.h"
#include "models/layers.h"
#include "tests/models/checkpoint_test_util.h"
#include "tests/ops/op_test_util.h"

namespace dflow {
namespace {

using models::ChannelGroup;
namespace detection = models::detection;
using models::PruneScope;
using models::TensorsByName;

int64_t Zeros(const Tensor& mask) {
  return std::count(mask.data<float>(), mask.data<float>() + mask.NumElements(), 0.0f);
}

TEST_CASE("L1 unstructured masks prune the smallest weights of each layer", "[pruning]") {
  TensorsByName w{{"a", Tensor::FromVector<float>({0.5f, -0.1f, 2.0f, -3.0f, 0.2f, 0.0f}, {2, 3})},
                  {"b", Tensor::FromVector<float>({10.0f, -20.0f, 30.0f, 40.0f})}};
  TensorsByName masks = models::L1UnstructuredMasks(w, 0.5, PruneScope::kPerLayer);
  // a: |w| = .5 .1 2 3 .2 0: the three smallest are 0, .1, .2.
  CHECK(std::vector<float>(masks["a"].data<float>(), masks["a"].data<float>() + 6) ==
        std::vector<float>{1, 0, 1, 1, 0, 0});
  CHECK(std::vector<float>(masks["b"].data<float>(), masks["b"].data<float>() + 4) ==
        std::vector<float>{0, 0, 1, 1});
  Tensor pruned = models::ApplyMask(w["a"], masks["a"]);
  CHECK(pruned.data<float>()[1] == 0.0f);
  CHECK(pruned.data<float>()[2] == 2.0f);
  CHECK(masks["a"].shape() == Shape{2, 3});
}

TEST_CASE("Global L1 masks prune the smallest weights of all layers together", "[pruning]") {
  TensorsByName w{{"a", Tensor::FromVector<float>({0.5f, -0.1f, 2.0f, -3.0f, 0.2f, 0.0f})},
                  {"b", Tensor::FromVector<float>({10.0f, -20.0f, 30.0f, 0.3f})}};
  TensorsByName masks = models::L1UnstructuredMasks(w, 0.4, PruneScope::kGlobal);  // 4 of 10
  CHECK(Zeros(masks["a"]) == 3);  // 0, .1, .2
  CHECK(Zeros(masks["b"]) == 1);  // .3
  CHECK(masks["b"].data<float>()[3] == 0.0f);
  // Ties are cut by position, so the count is exact.
  TensorsByName flat{{"c", Tensor::FromVector<float>(std::vector<float>(10, 1.0f))}};
  CHECK(Zeros(models::L1UnstructuredMasks(flat, 0.3, PruneScope::kGlobal)["c"]) == 3);
  CHECK(Zeros(models::L1UnstructuredMasks(flat, 0.0, PruneScope::kPerLayer)["c"]) == 0);
  CHECK(Zeros(models::L1UnstructuredMasks(flat, 1.0, PruneScope::kPerLayer)["c"]) == 10);
}

TEST_CASE("Pruning refuses a bad sparsity or a tensor that is not float", "[pruning]") {
  TensorsByName w{{"a", Tensor::FromVector<float>({1.0f})}};
  testing::ExpectError([&] { models::L1UnstructuredMasks(w, 1.5, PruneScope::kPerLayer); },
                       Code::kInvalidArgument, std::vector<std::string>{"sparsity", "[0, 1]", "1.5"});
  TensorsByName ints{{"steps", Tensor::FromVector<int64_t>({1, 2})}};
  testing::ExpectError([&] { models::L1UnstructuredMasks(ints, 0.5, PruneScope::kPerLayer); },
                       Code::kInvalidArgument, std::vector<std::string>{"\"steps\"", "int64"});
}

TEST_CASE("KeepChannels keeps the given indices along any axis", "[pruning]") {
  std::vector<float> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  Tensor t = Tensor::FromVector<float>(v, {2, 3, 4});
  const std::vector<int64_t> kept_middle{0, 2}, kept_last{1, 3};
  Tensor middle = models::KeepChannels(t, 1, kept_middle);
  CHECK(middle.shape() == Shape{2, 2, 4});
  CHECK(std::vector<float>(middle.data<float>(), middle.data<float>() + 16) ==
        std::vector<float>{0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23});
  Tensor last = models::KeepChannels(t, 2, kept_last);
  CHECK(last.shape() == Shape{2, 3, 2});
  CHECK(last.data<float>()[0] == 1.0f);
  CHECK(last.data<float>()[1] == 3.0f);
  CHECK(last.data<float>()[2] == 5.0f);
}

TEST_CASE("ChooseChannels keeps the channels of largest importance, in order", "[pruning]") {
  std::vector<ChannelGroup> groups{
      {.layer = "bn", .channels = 4, .importance = {"bn/gamma", 0}, .slices = {{"bn/gamma", 0}}},
      {.layer = "conv", .channels = 3, .importance = {"conv/filter", 3}, .slices = {{"conv/filter", 3}}}};
  std::vector<float> filter(2 * 3);  // [1, 1, 2, 3]: channel c's L1 over the 2 inputs
  filter = {0.1f, -5.0f, 0.3f, 0.1f, 1.0f, -0.3f};  // L1: 0.2, 6, 0.6
  TensorsByName v{{"bn/gamma", Tensor::FromVector<float>({0.5f, -2.0f, 0.01f, 1.0f})},
                  {"conv/filter", Tensor::FromVector<float>(filter, {1, 1, 2, 3})}};
  auto kept = models::ChooseChannels(groups, v, 0.5);
  CHECK(kept["bn"] == std::vector<int64_t>{1, 3});
  CHECK(kept["conv"] == std::vector<int64_t>{1, 2});  // round(1.5) = 2 kept
  CHECK(models::ChooseChannels(groups, v, 1.0)["conv"].size() == 1);  // at least one
  groups[0].channels = 5;
  testing::ExpectError([&] { models::ChooseChannels(groups, v, 0.5); }, Code::kInvalidArgument,
                       std::vector<std::string>{"\"bn\"", "5 channels", "bn/gamma"});
  groups[0].importance.variable = "missing/gamma";
  testing::ExpectError([&] { models::ChooseChannels(groups, v, 0.5); }, Code::kInvalidArgument,
                       std::vector<std::string>{"\"bn\"", "missing/gamma"});
}

TEST_CASE("PruneChannels cuts the parts of a concatenated axis at their offsets", "[pruning]") {
  // Two layers of 3 and 2 channels concatenated, read by a 1x1 filter [1, 1, 5, 1].
  std::vector<ChannelGroup> groups{
      {.layer = "a", .channels = 3, .importance = {"a/bias", 0}, .slices = {{"a/bias", 0}, {"next/filter", 2, 0}}},
      {.layer = "b", .channels = 2, .importance = {"b/bias", 0}, .slices = {{"b/bias", 0}, {"next/filter", 2, 3}}}};
  TensorsByName v{{"a/bias", Tensor::FromVector<float>({1, 2, 3})},
                  {"b/bias", Tensor::FromVector<float>({4, 5})},
                  {"next/filter", Tensor::FromVector<float>({10, 11, 12, 13, 14}, {1, 1, 5, 1})}};
  std::map<std::string, std::vector<int64_t>> kept{{"a", {0, 2}}, {"b", {1}}};
  TensorsByName pruned = models::PruneChannels(groups, kept, v);
  testing::ExpectEqual(pruned.at("a/bias"), Tensor::FromVector<float>({1, 3}));
  testing::ExpectEqual(pruned.at("b/bias"), Tensor::FromVector<float>({5}));
  testing::ExpectEqual(pruned.at("next/filter"), Tensor::FromVector<float>({10, 12, 14}, {1, 1, 3, 1}));
  // Parts that overlap, or that leave indices of the axis to nobody.
  groups[1].slices[1].offset = 2;
  testing::ExpectError([&] { models::PruneChannels(groups, kept, v); }, Code::kInvalidArgument,
                       std::vector<std::string>{"index 2", "next/filter", "two layers"});
  groups[1].slices[1].offset = 4;
  testing::ExpectError([&] { models::PruneChannels(groups, kept, v); }, Code::kInvalidArgument,
                       std::vector<std::string>{"\"b\"", "from index 4", "next/filter"});
  groups.pop_back();
  testing::ExpectError([&] { models::PruneChannels(groups, kept, v); }, Code::kInvalidArgument,
                       std::vector<std::string>{"next/filter", "5 indices", "own 3"});
}

// A network on 64x64 inputs, inference mode: `build` adds it to the scope
// (its layers' channels as given) and returns what it computes.
using BuildNetwork = std::function<std::vector<Output>(const Scope&, const Output& images,
                                                       const std::map<std::string, int64_t>& channels)>;

struct SmallNet {
  Scope scope = Scope::NewRootScope();
  Output images;
  std::vector<Output> outputs;
  std::unique_ptr<Session> session;

  SmallNet(const BuildNetwork& build, const std::map<std::string, int64_t>& channels) {
    images = ops::Placeholder(scope.WithOpName("images"), DType::kFloat32, {-1, 64, 64, 3});
    outputs = build(scope, images, channels);
    session = std::make_unique<Session>(scope);
    session->Run({}, {}, {ops::GlobalVariablesInitializer(scope)});
  }
  std::vector<std::string> VariableNames() const {
    std::vector<std::string> names;
    for (const Node* node : scope.graph().nodes())
      if (node->op() == "VariableV2") names.push_back(node->name());
    return names;
  }
  int64_t Parameters() const {
    std::vector<Output> variables;
    for (Node* node : scope.graph().nodes())
      if (node->op() == "VariableV2") variables.emplace_back(node);
    return models::CountParameters(variables);
  }
  TensorsByName Variables() {
    const std::vector<std::string> names = VariableNames();
    std::vector<TensorName> fetches(names.begin(), names.end());
    std::vector<Tensor> values = session->Run(fetches);
    TensorsByName out;
    for (size_t i = 0; i < names.size(); ++i) out[names[i]] = values[i];
    return out;
  }
  void Load(const TensorsByName& variables, const std::string& path) {
    std::vector<NamedTensor> tensors;
    for (const auto& [name, t] : variables) tensors.push_back({name, t});
    WriteSafetensors(path, tensors);
    Saver(scope).Restore(*session, path);
  }
  std::vector<Tensor> Run(const Tensor& input) {
    return session->Run({{images, input}}, std::vector<TensorName>(outputs.begin(), outputs.end()));
  }
};

// Sets channel c of a tensor's last axis (every c-th value) to `value`.
void SetChannel(Tensor& t, int64_t c, float value) {
  const int64_t channels = t.shape().dim(t.shape().rank() - 1);
  for (int64_t i = c; i < t.NumElements(); i += channels) t.data<float>()[i] = value;
}

// Makes the odd channels of every group dead (0 whatever the input): a
// batch-norm layer's gamma 0 and beta -1 (its ReLU then gives 0), a biased
// layer's filter and bias 0 (with or without ReLU). A depthwise layer
// reading a dead channel is killed the same way at that channel, so that
// its ReLU(bias) does not reach the next layer either.
void KillOddChannels(const std::vector<ChannelGroup>& groups, TensorsByName& v) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> around_one(0.5f, 1.5f), small(-0.1f, 0.1f);
  for (auto& [name, t] : v) {  // moving statistics away from 0 and 1, so that they matter
    if (name.ends_with("moving_mean"))
      for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = small(rng);
    if (name.ends_with("moving_variance") || name.ends_with("gamma"))
      for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = around_one(rng);
  }
  for (const ChannelGroup& g : groups)
    for (int64_t c = 1; c < g.channels; c += 2) {
      const std::string layer = g.importance.variable.substr(0, g.importance.variable.rfind('/'));
      if (g.importance.variable.ends_with("/gamma")) {
        SetChannel(v.at(layer + "/gamma"), c, 0);
        SetChannel(v.at(layer + "/beta"), c, -1);
      } else {
        SetChannel(v.at(layer + "/filter"), c, 0);
        SetChannel(v.at(layer + "/bias"), c, 0);
      }
      for (const models::ChannelSlice& s : g.slices) {
        if (s.variable.ends_with("depthwise/gamma")) SetChannel(v.at(s.variable), s.offset + c, 0);
        if (s.variable.ends_with("depthwise/beta")) SetChannel(v.at(s.variable), s.offset + c, -1);
        if (s.variable.ends_with("depthwise/bias")) SetChannel(v.at(s.variable), s.offset + c, 0);
      }
    }
}

// Kills the odd channels of every group of the network, removes them, and
// checks that the thinner network (built with the pruned channel counts)
// computes what the wide one did. Returns the pruned channel counts.
std::map<std::string, int64_t> CheckPrunedNetworkComputesTheSame(const BuildNetwork& build,
                                                                 const std::vector<ChannelGroup>& groups) {
  testing::ScratchDir dir("dflow_pruning");
  SmallNet wide(build, {});
  TensorsByName v = wide.Variables();
  KillOddChannels(groups, v);
  wide.Load(v, dir / "wide.safetensors");
  Tensor input = testing::RandomTensor(DType::kFloat32, {2, 64, 64, 3}, 3, 0, 1);
  std::vector<Tensor> expected = wide.Run(input);

  auto kept = models::ChooseChannels(groups, v, 0.5);
  std::map<std::string, int64_t> channels;
  for (const ChannelGroup& g : groups) {
    INFO(g.layer);
    REQUIRE(kept[g.layer].size() == static_cast<size_t>(g.channels / 2));
    for (size_t i = 0; i < kept[g.layer].size(); ++i) CHECK(kept[g.layer][i] == static_cast<int64_t>(2 * i));
    channels[g.layer] = g.channels / 2;
  }
  TensorsByName pruned = models::PruneChannels(groups, kept, v);
  SmallNet thin(build, channels);
  CHECK(thin.Parameters() < wide.Parameters());
  thin.Load(pruned, dir / "thin.safetensors");
  std::vector<Tensor> got = thin.Run(input);
  for (size_t k = 0; k < got.size(); ++k) {
    REQUIRE(got[k].shape() == expected[k].shape());
    float worst = 0, largest = 0;
    for (int64_t i = 0; i < got[k].NumElements(); ++i) {
      worst = std::max(worst, std::fabs(got[k].data<float>()[i] - expected[k].data<float>()[i]));
      largest = std::max(largest, std::fabs(expected[k].data<float>()[i]));
    }
    CHECK(largest > 0.01f);
    CHECK(worst <= 1e-4f * largest);
  }
  return channels;
}

TEST_CASE("Channel pruning rebuilds MobileNet-SSD thinner, computing what the wide one did", "[pruning]") {
  BuildNetwork build = [](const Scope& scope, const Output& images, const std::map<std::string, int64_t>& channels) {
    models::MobileNetSsd net = models::BuildMobileNetSsd(
        scope, images, {.num_classes = 3, .training = false, .width_multiplier = 0.25, .channels = channels});
    return std::vector<Output>{net.boxes, net.classes};
  };
  std::vector<ChannelGroup> groups = models::MobileNetSsdChannelGroups({.width_multiplier = 0.25});
  REQUIRE(groups.size() == 1 + 13 + 8);
  std::map<std::string, int64_t> channels = CheckPrunedNetworkComputesTheSame(build, groups);
  CHECK(SmallNet(build, channels).Parameters() < SmallNet(build, {}).Parameters() / 2);
  // The thinner network's groups describe its own variables.
  for (const ChannelGroup& g : models::MobileNetSsdChannelGroups({.width_multiplier = 0.25, .channels = channels}))
    CHECK(g.channels == channels[g.layer]);
}

TEST_CASE("Channel pruning rebuilds SqueezeNet-SSD thinner, its fires' concatenations cut in place", "[pruning]") {
  BuildNetwork build = [](const Scope& scope, const Output& images, const std::map<std::string, int64_t>& channels) {
    models::SqueezeNetSsd net = models::BuildSqueezeNetSsd(
        scope, images, {.num_classes = 3, .backbone = {.training = false}, .channels = channels});
    return std::vector<Output>{net.boxes, net.classes};
  };
  std::vector<ChannelGroup> groups = models::SqueezeNetSsdChannelGroups({});
  REQUIRE(groups.size() == 1 + 8 * 3 + 5 * 2);
  std::map<std::string, int64_t> channels = CheckPrunedNetworkComputesTheSame(build, groups);
  CHECK(channels.at("squeezenet/fire9/expand3x3") == 128);
  CHECK(channels.at("extra5/expand") == 128);
  for (const ChannelGroup& g : models::SqueezeNetSsdChannelGroups({.channels = channels}))
    CHECK(g.channels == channels[g.layer]);
  testing::ExpectError([] { models::SqueezeNetSsdChannelGroups({.channels = {{"squeezenet/fire10/squeeze", 8}}}); },
                       Code::kInvalidArgument, std::vector<std::string>{"fire10/squeeze"});
  testing::ExpectError([] { models::SqueezeNetSsdChannelGroups({.channels = {{"extra6/reduce", 8}}}); },
                       Code::kInvalidArgument, std::vector<std::string>{"extra6/reduce"});
}

TEST_CASE("Channel pruning rebuilds RetinaNet thinner inside its ResNet blocks and subnets", "[pruning]") {
  for (int depth : {18, 50}) {
    DYNAMIC_SECTION("ResNet-" << depth) {
      BuildNetwork build = [depth](const Scope& scope, const Output& images,
                                   const std::map<std::string, int64_t>& channels) {
        detection::RetinaNetNetwork net = detection::BuildRetinaNetNetwork(
            scope, {.num_classes = 2, .image_size = 64, .depth = depth, .training = false, .channels = channels},
            images);
        return std::vector<Output>{net.box_deltas, net.class_logits};
      };
      const detection::RetinaNetOptions options{.image_size = 64, .depth = depth};
      std::vector<ChannelGroup> groups = detection::RetinaNetChannelGroups(options);
      REQUIRE(groups.size() == (depth == 18 ? 8u : 2u * 16) + 8);
      std::map<std::string, int64_t> channels = CheckPrunedNetworkComputesTheSame(build, groups);
      CHECK(channels.at("resnet/layer4/block1/conv1") == 256);
      CHECK(channels.at("box_head/conv4") == 128);
    }
  }
  testing::ExpectError(
      [] { detection::RetinaNetChannelGroups({.depth = 18, .channels = {{"resnet/layer1/block0/conv2", 8}}}); },
      Code::kInvalidArgument, std::vector<std::string>{"layer1/block0/conv2"});
  testing::ExpectError([] { detection::RetinaNetChannelGroups({.channels = {{"class_head/predict", 8}}}); },
                       Code::kInvalidArgument, std::vector<std::string>{"class_head/predict"});
}

TEST_CASE("MobileNet-SSD refuses channel counts of unknown layers", "[pruning]") {
  testing::ExpectError([] { models::MobileNetSsdChannelGroups({.channels = {{"block14/pointwise", 8}}}); },
                       Code::kInvalidArgument, std::vector<std::string>{"block14/pointwise"});
  testing::ExpectError([] { models::MobileNetSsdChannelGroups({.channels = {{"stem", 0}}}); },
                       Code::kInvalidArgument, std::vector<std::string>{"\"stem\"", "at least 1"});
  TensorsByName v{{"stem/filter", Tensor::Zeros(DType::kFloat32, {3, 3, 3, 8})}};
  testing::ExpectError([&] { models::PruneChannels(models::MobileNetSsdChannelGroups({.width_multiplier = 0.25}), {}, v); },
                       Code::kInvalidArgument, std::vector<std::string>{"\"stem\"", "stem/gamma"});
}

}  // namespace
}  // namespace dflow

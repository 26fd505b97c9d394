// dflow's SSD detector (models/detection/ssd.h: MobileNetV1-SSD300) measured
// the way ../shared/reference/torch_detection.py measures the same detector
// in PyTorch, so that bench/compare_detect can set the two side by side.
// Prints one JSON line with the reference's keys:
//   train_img_per_s  a whole training step: MatchSsd for every image of the
//                    batch (torch matches inside its loss too), then the loss
//                    with 3:1 mining, backward and an SGD momentum step
//   latency_ms       batch 1, image tensor in, final boxes out: the network
//                    (inference graph passes on), decoding and CombinedNMS
//   postprocess_ms   decoding and CombinedNMS alone, the network's outputs fed
//   peak_rss_mb, params
// plus match_ms_per_step (the matching alone) and train_cpu_ms_per_step (the
// process's CPU time per training step: on a loaded machine a steadier
// figure than the wall time).
//   bench_detect --model ssd --batch 4 --size 300 --classes 5 --threads 2 --steps 5
#include <algorithm>
#include <iostream>
#include <random>
#include <span>
#include <vector>

#include <CLI/CLI.hpp>

#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "bench/timing.h"
#include "graph/session.h"
#include "models/detection/matching.h"
#include "models/detection/ssd.h"
#include "models/layers.h"
#include "ops/ops.h"

namespace {

using namespace dflow;
using models::detection::SsdNetwork;

struct Settings {
  std::string model = "ssd";
  int64_t batch = 4, size = 300, classes = 5;
  int threads = 2, steps = 5;
};

// As the reference's post(): scores > 0.01, at most 200 per class and 200 in all.
constexpr models::detection::SsdPostprocessOptions kPostprocess{
    .max_per_class = 200, .max_detections = 200, .score_threshold = 0.01f};

// float32 [n, size, size, 3], uniform in [0, 1] as the network expects.
Tensor RandomImages(int64_t n, int64_t size, std::mt19937& random) {
  Tensor t(DType::kFloat32, Shape{n, size, size, 3});
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  for (float& v : t.flat<float>()) v = pixel(random);
  return t;
}

struct Objects {
  std::vector<float> boxes;  // (y1, x1, y2, x2) per object
  std::vector<int32_t> labels;
};

// The reference's random_targets: 1-6 objects per image, the top-left corner
// in [0, 0.7], height and width in [0.05, 0.3], labels 1..classes.
std::vector<Objects> RandomObjects(int64_t images, int64_t classes, std::mt19937& random) {
  std::uniform_int_distribution<int> count(1, 6);
  std::uniform_int_distribution<int32_t> label(1, static_cast<int32_t>(classes));
  std::uniform_real_distribution<float> corner(0.0f, 0.7f), extent(0.05f, 0.3f);
  std::vector<Objects> out(static_cast<size_t>(images));
  for (Objects& image : out) {
    for (int k = count(random); k > 0; --k) {
      float y = corner(random), x = corner(random);
      image.boxes.insert(image.boxes.end(), {y, x, y + extent(random), x + extent(random)});
      image.labels.push_back(label(random));
    }
  }
  return out;
}

models::detection::SsdOptions SsdOptionsFor(const Settings& s, bool training) {
  return {.num_classes = s.classes, .image_size = s.size, .training = training};
}

struct TrainResult {
  double step_s = 0, cpu_s = 0, match_s = 0;
  int64_t params = 0;
};

// The training graph of the reference: SSD loss, SGD(1e-3, momentum 0.9),
// the batch-norm moving averages with each step.
TrainResult TimeTraining(const Settings& s, std::mt19937& random) {
  Scope scope = Scope::NewRootScope();
  scope.graph().set_seed(1);
  SsdNetwork net = models::detection::BuildSsdNetwork(scope, SsdOptionsFor(s, true));
  models::detection::SsdLoss loss = models::detection::BuildSsdLoss(scope, net);
  autodiff::MomentumOptimizer sgd(autodiff::ConstantLearningRate(scope, 1e-3), 0.9);
  std::vector<Output> deps(net.batch_norm_updates);
  deps.emplace_back(sgd.Minimize(scope, loss.loss, net.variables));
  Node* train = ops::NoOp(scope.WithControlDependencies(deps).WithOpName("train_all"));
  Session session(scope, {.num_threads = s.threads});
  session.Run({}, {}, {ops::GlobalVariablesInitializer(scope)});

  const Tensor images = RandomImages(s.batch, s.size, random);
  const std::vector<Objects> objects = RandomObjects(s.batch, s.classes, random);
  const std::span<const float> anchors = net.anchors.flat<float>();
  const int64_t a = net.anchors.shape().dim(0);
  Tensor box_targets(DType::kFloat32, Shape{s.batch, a, 4});
  Tensor class_targets(DType::kInt32, Shape{s.batch, a});
  auto match = [&] {
    for (int64_t i = 0; i < s.batch; ++i) {
      const Objects& image = objects[static_cast<size_t>(i)];
      models::detection::MatchResult m = models::detection::MatchSsd(anchors, {image.boxes, image.labels});
      std::copy_n(m.box_targets.data(), 4 * a, box_targets.data<float>() + i * 4 * a);
      std::copy_n(m.class_targets.data(), a, class_targets.data<int32_t>() + i * a);
    }
  };
  auto step = [&] {
    match();
    session.Run({{net.images, images}, {loss.box_targets, box_targets},
                 {loss.class_targets, class_targets}},
                {loss.loss}, {train});
  };
  TrainResult result;
  result.step_s = bench::Timed(step, s.steps, &result.cpu_s);
  result.match_s = bench::Timed(match, s.steps);
  result.params = models::CountParameters(net.variables);
  return result;
}

struct InferenceResult {
  double latency_s = 0, postprocess_s = 0;
};

// Batch 1 on the inference graph (moving batch-norm statistics, batch norms
// folded and conv + bias + activation fused, as bench_models' latency).
InferenceResult TimeInference(const Settings& s, std::mt19937& random) {
  Scope scope = Scope::NewRootScope();
  scope.graph().set_seed(1);
  SsdNetwork net = models::detection::BuildSsdNetwork(scope, SsdOptionsFor(s, false));
  models::detection::SsdDetections out =
      models::detection::BuildSsdPostprocess(scope, net, kPostprocess);
  SessionOptions options{.num_threads = s.threads};
  options.passes.fold_batch_norm = options.passes.fuse_conv_bias_activation = true;
  Session session(scope, options);
  session.Run({}, {}, {ops::GlobalVariablesInitializer(scope)});

  const Tensor image = RandomImages(1, s.size, random);
  const std::vector<TensorName> detections = {out.boxes, out.scores, out.classes, out.valid};
  InferenceResult result;
  result.latency_s = bench::Timed([&] { session.Run({{net.images, image}}, detections); }, 3 * s.steps);
  // Fed the heads' outputs, the session prunes the network away: what is
  // left is the decoding, softmax and NMS.
  std::vector<Tensor> heads = session.Run({{net.images, image}}, {net.box_deltas, net.class_logits});
  FeedList fed = {{net.box_deltas, heads[0]}, {net.class_logits, heads[1]}};
  result.postprocess_s = bench::Timed([&] { session.Run(fed, detections); }, 3 * s.steps);
  return result;
}

void Run(const Settings& s) {
  std::mt19937 random(0);
  TrainResult train = TimeTraining(s, random);  // its graph and session are freed here
  InferenceResult inference = TimeInference(s, random);
  std::cout << "{\"model\": \"" << s.model << "\", \"batch\": " << s.batch << ", \"size\": " << s.size
            << ", \"threads\": " << s.threads << ", \"classes\": " << s.classes
            << ", \"params\": " << train.params
            << ", \"train_img_per_s\": " << static_cast<double>(s.batch) / train.step_s
            << ", \"latency_ms\": " << inference.latency_s * 1000
            << ", \"postprocess_ms\": " << inference.postprocess_s * 1000
            << ", \"peak_rss_mb\": " << bench::PeakRssMb()
            << ", \"match_ms_per_step\": " << train.match_s * 1000
            << ", \"train_cpu_ms_per_step\": " << train.cpu_s * 1000 << "}" << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  CLI::App app("Benchmark dflow's SSD detector like torch_detection.py.");
  app.add_option("--model", s.model)->check(CLI::IsMember({"ssd"}))->required();
  app.add_option("--batch", s.batch)->check(CLI::PositiveNumber);
  app.add_option("--size", s.size)->check(CLI::Range(64, 4096));
  app.add_option("--classes", s.classes)->check(CLI::PositiveNumber);
  app.add_option("--threads", s.threads)->check(CLI::Range(1, 256));
  app.add_option("--steps", s.steps)->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    Run(s);
  } catch (const dflow::Error& e) {
    std::cerr << "bench_detect: " << e.what() << "\n";
    return 1;
  }
}

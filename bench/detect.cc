// dflow's detectors measured the way ../shared/reference/torch_detection.py
// measures the same detectors in PyTorch, so that bench/compare_detect can
// set the two side by side: --model ssd (models/detection/ssd.h:
// MobileNetV1-SSD) or retinanet (models/detection/retinanet.h: ResNet-50
// FPN, as torchvision's retinanet_resnet50_fpn: P6 on P5, L1 box loss, a
// class for the background among num_classes, so the same parameters).
// Prints one JSON line with the reference's keys:
//   train_img_per_s  a whole training step: the matching of every image of
//                    the batch (torch matches inside its loss too), then the
//                    loss (SSD: 3:1 mining; RetinaNet: focal), backward and
//                    an SGD momentum step
//   latency_ms       batch 1, image tensor in, final boxes out: the network
//                    (inference graph passes on), decoding and CombinedNMS
//   postprocess_ms   decoding and CombinedNMS alone, the network's outputs fed
//   peak_rss_mb, params
// plus match_ms_per_step (the matching alone) and train_cpu_ms_per_step (the
// process's CPU time per training step: on a loaded machine a steadier
// figure than the wall time).
//   bench_detect --model ssd --batch 4 --size 300 --classes 5 --threads 2 --steps 5
//   bench_detect --model retinanet --batch 2 --size 320 --classes 5 --threads 2 --steps 5
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
#include "models/detection/retinanet.h"
#include "models/detection/ssd.h"
#include "models/layers.h"
#include "ops/ops.h"

namespace {

using namespace dflow;
namespace detection = models::detection;

struct Settings {
  std::string model = "ssd";
  int64_t batch = 4, size = 300, classes = 5;
  int threads = 2, steps = 5;
};

// As the reference's post(): scores > 0.01, at most 200 per class and 200 in all.
constexpr detection::SsdPostprocessOptions kPostprocess{
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

detection::SsdOptions SsdOptionsFor(const Settings& s, bool training) {
  return {.num_classes = s.classes, .image_size = s.size, .training = training};
}

// torchvision's retinanet_resnet50_fpn(num_classes = classes + 1).
detection::RetinaNetOptions RetinaNetOptionsFor(const Settings& s, bool training) {
  return {.num_classes = s.classes + 1, .image_size = s.size, .depth = 50, .training = training, .p6_from_p5 = true};
}

// What the training step needs of either detector.
struct TrainingGraph {
  Output images, loss, box_targets, class_targets;
  Tensor anchors;
  std::vector<Output> variables, batch_norm_updates;
};

TrainingGraph BuildTraining(const Scope& scope, const Settings& s) {
  if (s.model == "ssd") {
    detection::SsdNetwork net = detection::BuildSsdNetwork(scope, SsdOptionsFor(s, true));
    detection::SsdLoss loss = detection::BuildSsdLoss(scope, net);
    return {net.images, loss.loss, loss.box_targets, loss.class_targets, net.anchors, net.variables,
            net.batch_norm_updates};
  }
  detection::RetinaNetNetwork net = detection::BuildRetinaNetNetwork(scope, RetinaNetOptionsFor(s, true));
  detection::RetinaNetLoss loss = detection::BuildRetinaNetLoss(scope, net, {.smooth_l1_beta = 0});
  return {net.images, loss.loss, loss.box_targets, loss.class_targets, net.anchors, net.variables,
          net.batch_norm_updates};
}

detection::MatchResult Match(const Settings& s, std::span<const float> anchors, const Objects& image) {
  if (s.model == "ssd") return detection::MatchSsd(anchors, {image.boxes, image.labels});
  return detection::MatchRetinaNet(anchors, {image.boxes, image.labels}, {.allow_low_quality_matches = true});
}

struct TrainResult {
  double step_s = 0, cpu_s = 0, match_s = 0;
  int64_t params = 0;
};

// The training graph of the reference: the detector's loss, SGD(1e-3,
// momentum 0.9), the batch-norm moving averages with each step.
TrainResult TimeTraining(const Settings& s, std::mt19937& random) {
  Scope scope = Scope::NewRootScope();
  scope.graph().set_seed(1);
  const TrainingGraph net = BuildTraining(scope, s);
  autodiff::MomentumOptimizer sgd(autodiff::ConstantLearningRate(scope, 1e-3), 0.9);
  std::vector<Output> deps(net.batch_norm_updates);
  deps.emplace_back(sgd.Minimize(scope, net.loss, net.variables));
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
      detection::MatchResult m = Match(s, anchors, objects[static_cast<size_t>(i)]);
      std::copy_n(m.box_targets.data(), 4 * a, box_targets.data<float>() + i * 4 * a);
      std::copy_n(m.class_targets.data(), a, class_targets.data<int32_t>() + i * a);
    }
  };
  auto step = [&] {
    match();
    session.Run({{net.images, images}, {net.box_targets, box_targets}, {net.class_targets, class_targets}},
                {net.loss}, {train});
  };
  TrainResult result;
  result.step_s = bench::Timed(step, s.steps, &result.cpu_s);
  result.match_s = bench::Timed(match, s.steps);
  result.params = models::CountParameters(net.variables);
  return result;
}

// What batch-1 inference needs of either detector.
struct InferenceGraph {
  Output images, box_deltas, class_logits;
  detection::Detections out;
};

InferenceGraph BuildInference(const Scope& scope, const Settings& s) {
  if (s.model == "ssd") {
    detection::SsdNetwork net = detection::BuildSsdNetwork(scope, SsdOptionsFor(s, false));
    return {net.images, net.box_deltas, net.class_logits, detection::BuildSsdPostprocess(scope, net, kPostprocess)};
  }
  // The paper's inference, as torchvision's: score 0.05, IoU 0.5.
  detection::RetinaNetNetwork net = detection::BuildRetinaNetNetwork(scope, RetinaNetOptionsFor(s, false));
  return {net.images, net.box_deltas, net.class_logits, detection::BuildRetinaNetPostprocess(scope, net)};
}

struct InferenceResult {
  double latency_s = 0, postprocess_s = 0;
};

// Batch 1 on the inference graph (moving batch-norm statistics, batch norms
// folded and conv + bias + activation fused, as bench_models' latency).
InferenceResult TimeInference(const Settings& s, std::mt19937& random) {
  Scope scope = Scope::NewRootScope();
  scope.graph().set_seed(1);
  const InferenceGraph net = BuildInference(scope, s);
  SessionOptions options{.num_threads = s.threads};
  options.passes.fold_batch_norm = options.passes.fuse_conv_bias_activation = true;
  Session session(scope, options);
  session.Run({}, {}, {ops::GlobalVariablesInitializer(scope)});

  const Tensor image = RandomImages(1, s.size, random);
  const std::vector<TensorName> detections = {net.out.boxes, net.out.scores, net.out.classes, net.out.valid};
  InferenceResult result;
  result.latency_s = bench::Timed([&] { session.Run({{net.images, image}}, detections); }, 3 * s.steps);
  // Fed the heads' outputs, the session prunes the network away: what is
  // left is the decoding, the class scores and NMS.
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
  CLI::App app("Benchmark dflow's SSD and RetinaNet detectors like torch_detection.py.");
  app.add_option("--model", s.model)->check(CLI::IsMember({"ssd", "retinanet"}))->required();
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

// Incremental learning's graph pieces (models/detection/incremental.h): a
// head widened for new classes gives the old classes' outputs bit for bit,
// for SSD and RetinaNet; the distillation terms are what they say, and no
// gradient reaches the teacher.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "autodiff/gradients.h"
#include "graph/session.h"
#include "models/detection/incremental.h"
#include "models/detection/retinanet.h"
#include "models/detection/ssd.h"
#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::models::detection;
using dflow::testing::ExpectError;

namespace {

// A network of some class count in its own graph, initialised.
struct Built {
  Scope scope = Scope::NewRootScope();
  Output images, class_logits, box_deltas;
  std::unique_ptr<Session> session;
};

std::unique_ptr<Built> BuildSsd(int64_t classes, int64_t seed) {
  auto b = std::make_unique<Built>();
  b->scope.graph().set_seed(seed);
  SsdNetwork net = BuildSsdNetwork(b->scope, {.num_classes = classes, .image_size = 64,
                                              .width_multiplier = 0.25, .training = false});
  b->images = net.images, b->class_logits = net.class_logits, b->box_deltas = net.box_deltas;
  b->session = std::make_unique<Session>(b->scope);
  b->session->Run({}, {}, {ops::GlobalVariablesInitializer(b->scope)});
  return b;
}

std::unique_ptr<Built> BuildRetinaNet(int64_t classes, int64_t seed) {
  auto b = std::make_unique<Built>();
  b->scope.graph().set_seed(seed);
  RetinaNetNetwork net = BuildRetinaNetNetwork(
      b->scope, {.num_classes = classes, .image_size = 64, .depth = 18, .training = false});
  b->images = net.images, b->class_logits = net.class_logits, b->box_deltas = net.box_deltas;
  b->session = std::make_unique<Session>(b->scope);
  b->session->Run({}, {}, {ops::GlobalVariablesInitializer(b->scope)});
  return b;
}

// Every variable of `old` into `wide` (the same names), the class output
// layers widened: what dflow-detect add-class does before its first step.
int CopyWidened(Built& old, Built& wide, int64_t old_columns, int64_t new_columns) {
  int widened = 0;
  for (const Node* node : old.scope.graph().nodes()) {
    if (node->op() != "VariableV2") continue;
    Tensor value = old.session->Run({}, {node->name()})[0];
    Tensor fresh = wide.session->Run({}, {node->name()})[0];
    if (value.shape() != fresh.shape()) {
      value = WidenClassOutputs(value, fresh, old_columns, new_columns);
      ++widened;
    }
    wide.session->resources().FindVariable(node->name())->Assign(value);
  }
  return widened;
}

Tensor SomeImages() {
  Tensor images(DType::kFloat32, Shape{2, 64, 64, 3});
  for (int64_t i = 0; i < images.NumElements(); ++i)
    images.data<float>()[i] = static_cast<float>((i * 7919) % 256) / 255.0f;
  return images;
}

// The wide network's first `old_columns` class columns and its boxes equal
// the old network's, bit for bit.
void CheckSameOldOutputs(Built& old, Built& wide, int64_t old_columns) {
  Tensor images = SomeImages();
  std::vector<Tensor> a = old.session->Run({{old.images, images}}, {old.class_logits, old.box_deltas});
  std::vector<Tensor> b = wide.session->Run({{wide.images, images}}, {wide.class_logits, wide.box_deltas});
  const int64_t anchors = a[0].dim(1), new_columns = b[0].dim(2);
  REQUIRE(a[0].dim(2) == old_columns);
  REQUIRE(b[0].dim(1) == anchors);
  int64_t differing = 0;
  for (int64_t row = 0; row < 2 * anchors; ++row)
    for (int64_t c = 0; c < old_columns; ++c)
      differing += a[0].data<float>()[row * old_columns + c] != b[0].data<float>()[row * new_columns + c];
  CHECK(differing == 0);
  REQUIRE(a[1].NumElements() == b[1].NumElements());
  CHECK(std::equal(a[1].data<float>(), a[1].data<float>() + a[1].NumElements(), b[1].data<float>()));
}

}  // namespace

TEST_CASE("Incremental: SSD widened from 3 to 5 classes keeps the old outputs bit for bit",
          "[incremental]") {
  std::unique_ptr<Built> old = BuildSsd(3, 1), wide = BuildSsd(5, 2);
  CHECK(CopyWidened(*old, *wide, 4, 6) == 12);  // weights and bias of six maps' class convs
  CheckSameOldOutputs(*old, *wide, 4);
}

TEST_CASE("Incremental: RetinaNet widened from 2 to 3 classes keeps the old outputs bit for bit",
          "[incremental]") {
  std::unique_ptr<Built> old = BuildRetinaNet(2, 1), wide = BuildRetinaNet(3, 2);
  CHECK(CopyWidened(*old, *wide, 2, 3) == 2);  // the class subnet's last conv, shared by the levels
  CheckSameOldOutputs(*old, *wide, 2);
}

TEST_CASE("Incremental: widening copies each anchor's old columns and keeps the new ones",
          "[incremental]") {
  // 2 input rows x 2 anchors x 2 old columns -> 3 columns.
  Tensor old = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8}, Shape{2, 4});
  Tensor fresh = Tensor::FromVector<float>(std::vector<float>(12, -1.0f), Shape{2, 6});
  Tensor wide = WidenClassOutputs(old, fresh, 2, 3);
  std::vector<float> got(wide.data<float>(), wide.data<float>() + 12);
  CHECK(got == std::vector<float>{1, 2, -1, 3, 4, -1, 5, 6, -1, 7, 8, -1});
  CHECK(fresh.data<float>()[0] == -1.0f);  // the fresh value is not changed
  CHECK_THROWS_WITH(WidenClassOutputs(old, Tensor::FromVector<float>(std::vector<float>(10, 0), Shape{2, 5}), 2, 3),
                    Catch::Contains("from 2 to 3 columns per anchor: the old [2,4] and new [2,5] do not fit"));
  CHECK_THROWS_WITH(WidenClassOutputs(old, fresh, 3, 2), Catch::Contains("do not fit"));
}

TEST_CASE("Incremental: the distillation terms, and no gradient reaches the teacher", "[incremental]") {
  Scope scope = Scope::NewRootScope();
  // One image, two anchors; the teacher has background + 1 class (SSD), the
  // student one more class.
  Output teacher_logits = ops::Placeholder(scope.WithOpName("teacher_logits"), DType::kFloat32, {1, 2, 2});
  Output teacher_boxes = ops::Placeholder(scope.WithOpName("teacher_boxes"), DType::kFloat32, {1, 2, 4});
  Output student_logits = ops::Placeholder(scope.WithOpName("student_logits"), DType::kFloat32, {1, 2, 3});
  Output student_boxes = ops::Placeholder(scope.WithOpName("student_boxes"), DType::kFloat32, {1, 2, 4});
  DistillationLoss loss = BuildDistillationLoss(
      scope, {teacher_logits, teacher_boxes, student_logits, student_boxes, 2, ClassScores::kSoftmaxWithBackground});
  // Anchor 0: the teacher sees background (logits 10, -10: p(bg) ~ 1);
  // anchor 1: an object (logits 0, 0: p(bg) = 0.5, foreground 0.5).
  Tensor tl = Tensor::FromVector<float>({10, -10, 0, 0}, Shape{1, 2, 2});
  Tensor sl = Tensor::FromVector<float>({10, -9, 5, 1, 0, 7}, Shape{1, 2, 3});
  Tensor tb = Tensor::FromVector<float>({0, 0, 0, 0, 0, 0, 0, 0}, Shape{1, 2, 4});
  Tensor sb = Tensor::FromVector<float>({3, 3, 3, 3, 0.5f, 0, 0, 2}, Shape{1, 2, 4});
  FeedList feeds{{teacher_logits, tl}, {student_logits, sl}, {teacher_boxes, tb}, {student_boxes, sb}};
  Session session(scope);
  std::vector<Tensor> out = session.Run(feeds, {loss.class_loss, loss.box_loss});
  // (0^2 + 1^2 + 1^2 + 0^2) / 4 over the old columns; the new column is free.
  CHECK(out[0].scalar<float>() == Approx(0.5f));
  // Anchor 0 weighs ~4.5e-9, anchor 1 0.5: smooth-L1 0.125 + 1.5 over the
  // weight sum max(1, 0.5) = 1, plus anchor 0's 4 * 2.5 * 4.5e-9.
  CHECK(out[1].scalar<float>() == Approx(0.5f * (0.125f + 1.5f)).epsilon(1e-4));
  std::vector<Output> grads =
      autodiff::AddGradients(scope, {ops::Add(scope, loss.class_loss, loss.box_loss)},
                             {teacher_logits, teacher_boxes, student_logits});
  CHECK(!grads[0].valid());
  CHECK(!grads[1].valid());
  REQUIRE(grads[2].valid());
  Tensor g = session.Run(feeds, {grads[2]})[0];
  CHECK(g.data<float>()[2] == 0.0f);  // the new class's column is not distilled
  CHECK(g.data<float>()[1] == Approx(2.0f * 1 / 4));  // d/ds (s - t)^2 / 4 at s - t = 1
}

namespace {

// KL(teacher || student) of one anchor's class distribution, by hand.
double SoftmaxKl(const std::vector<double>& t, const std::vector<double>& s) {
  auto probs = [](const std::vector<double>& x) {
    double z = 0;
    for (double v : x) z += std::exp(v);
    std::vector<double> p;
    for (double v : x) p.push_back(std::exp(v) / z);
    return p;
  };
  std::vector<double> p = probs(t), q = probs(s);
  double kl = 0;
  for (size_t c = 0; c < p.size(); ++c) kl += p[c] * std::log(p[c] / q[c]);
  return kl;
}

// The teacher's foreground score: 1 - p(background), or its highest sigmoid.
double ForegroundWeight(const std::vector<double>& t, bool ssd) {
  if (!ssd) return 1 / (1 + std::exp(-*std::max_element(t.begin(), t.end())));
  double z = 0;
  for (double v : t) z += std::exp(v);
  return 1 - std::exp(t[0]) / z;
}

double BernoulliKl(const std::vector<double>& t, const std::vector<double>& s) {
  double kl = 0;
  for (size_t c = 0; c < t.size(); ++c) {
    const double p = 1 / (1 + std::exp(-t[c])), q = 1 / (1 + std::exp(-s[c]));
    kl += p * std::log(p / q) + (1 - p) * std::log((1 - p) / (1 - q));
  }
  return kl;
}

}  // namespace

TEST_CASE("Knowledge distillation: soft targets weighted by the teacher's confidence, and their gradient",
          "[incremental]") {
  for (ClassScores scores : {ClassScores::kSoftmaxWithBackground, ClassScores::kSigmoid}) {
    const bool ssd = scores == ClassScores::kSoftmaxWithBackground;
    INFO((ssd ? "softmax with background" : "sigmoid"));
    Scope scope = Scope::NewRootScope();
    Output tl = ops::Placeholder(scope.WithOpName("tl"), DType::kFloat32, {1, 2, 3});
    Output sl = ops::Placeholder(scope.WithOpName("sl"), DType::kFloat32, {1, 2, 3});
    Output tb = ops::Placeholder(scope.WithOpName("tb"), DType::kFloat32, {1, 2, 4});
    Output sb = ops::Placeholder(scope.WithOpName("sb"), DType::kFloat32, {1, 2, 4});
    DistillationLoss loss = BuildDistillationLoss(
        scope, {.teacher_logits = tl, .teacher_boxes = tb, .student_logits = sl, .student_boxes = sb,
                .old_columns = 3, .scores = scores, .soft_targets = true});
    const std::vector<double> t0{2, -1, 0.5}, t1{-1, 3, 0}, s0{1, 0, 0}, s1{0.5, 1, -2};
    Tensor teacher = Tensor::FromVector<float>({2, -1, 0.5f, -1, 3, 0}, Shape{1, 2, 3});
    Tensor student = Tensor::FromVector<float>({1, 0, 0, 0.5f, 1, -2}, Shape{1, 2, 3});
    Tensor boxes = Tensor::Zeros(DType::kFloat32, {1, 2, 4});
    FeedList feeds{{tl, teacher}, {sl, student}, {tb, boxes}, {sb, boxes}};
    Session session(scope);
    auto weight = [&](const std::vector<double>& t) { return ForegroundWeight(t, ssd); };
    auto kl = [&](const std::vector<double>& t, const std::vector<double>& s) {
      return ssd ? SoftmaxKl(t, s) : BernoulliKl(t, s);
    };
    const double w0 = weight(t0), w1 = weight(t1);
    const double want = (w0 * kl(t0, s0) + w1 * kl(t1, s1)) / std::max(1.0, w0 + w1);
    CHECK(session.Run(feeds, {loss.class_loss})[0].scalar<float>() == Approx(want).epsilon(1e-4));
    std::vector<Output> grads = autodiff::AddGradients(scope, {loss.class_loss}, {tl, sl});
    CHECK(!grads[0].valid());  // no gradient reaches the teacher
    REQUIRE(grads[1].valid());
    Tensor g = session.Run(feeds, {grads[1]})[0];
    for (int64_t i = 0; i < 6; ++i) {
      auto at = [&](float delta) {
        FeedList moved = feeds;
        moved[1].second = student.Clone();
        moved[1].second.data<float>()[i] += delta;
        return static_cast<double>(session.Run(moved, {loss.class_loss})[0].scalar<float>());
      };
      INFO(i);
      CHECK(g.data<float>()[i] == Approx((at(1e-2f) - at(-1e-2f)) / 2e-2).margin(2e-3));
    }
    // A student that agrees with the teacher: no class term.
    FeedList same = feeds;
    same[1].second = teacher;
    CHECK(session.Run(same, {loss.class_loss})[0].scalar<float>() == Approx(0.0f).margin(1e-6));
  }
}

TEST_CASE("Knowledge distillation: soft targets at a temperature, and on every anchor", "[incremental]") {
  for (ClassScores scores : {ClassScores::kSoftmaxWithBackground, ClassScores::kSigmoid}) {
    const bool ssd = scores == ClassScores::kSoftmaxWithBackground;
    INFO((ssd ? "softmax with background" : "sigmoid"));
    Scope scope = Scope::NewRootScope();
    Output tl = ops::Placeholder(scope.WithOpName("tl"), DType::kFloat32, {1, 2, 3});
    Output sl = ops::Placeholder(scope.WithOpName("sl"), DType::kFloat32, {1, 2, 3});
    Output boxes = ops::Const(scope, Tensor::Zeros(DType::kFloat32, {1, 2, 4}));
    DistillationInputs inputs{.teacher_logits = tl, .teacher_boxes = boxes, .student_logits = sl,
                              .student_boxes = boxes, .old_columns = 3, .scores = scores,
                              .soft_targets = true, .temperature = 2.0};
    Output hot = BuildDistillationLoss(scope.NewSubScope("hot"), inputs).class_loss;
    inputs.soft_targets_everywhere = true;
    Output everywhere = BuildDistillationLoss(scope.NewSubScope("everywhere"), inputs).class_loss;
    const std::vector<double> t0{2, -1, 0.5}, t1{-1, 3, 0}, s0{1, 0, 0}, s1{0.5, 1, -2};
    FeedList feeds{{tl, Tensor::FromVector<float>({2, -1, 0.5f, -1, 3, 0}, Shape{1, 2, 3})},
                   {sl, Tensor::FromVector<float>({1, 0, 0, 0.5f, 1, -2}, Shape{1, 2, 3})}};
    auto scaled = [](const std::vector<double>& v) {
      std::vector<double> out;
      for (double x : v) out.push_back(x / 2);
      return out;
    };
    // The KL of the logits over T, times T^2; the weights stay the teacher's
    // foreground scores at temperature 1.
    auto kl = [&](const std::vector<double>& t, const std::vector<double>& s) {
      return 4 * (ssd ? SoftmaxKl(scaled(t), scaled(s)) : BernoulliKl(scaled(t), scaled(s)));
    };
    auto weight = [&](const std::vector<double>& t) { return ForegroundWeight(t, ssd); };
    const double w0 = weight(t0), w1 = weight(t1), total = std::max(1.0, w0 + w1);
    Session session(scope);
    std::vector<Tensor> got = session.Run(feeds, {hot, everywhere});
    CHECK(got[0].scalar<float>() == Approx((w0 * kl(t0, s0) + w1 * kl(t1, s1)) / total).epsilon(1e-4));
    CHECK(got[1].scalar<float>() == Approx((kl(t0, s0) + kl(t1, s1)) / total).epsilon(1e-4));
  }
  Scope scope = Scope::NewRootScope();
  Output x = ops::Const(scope, Tensor::Zeros(DType::kFloat32, {1, 2, 3}));
  Output b = ops::Const(scope, Tensor::Zeros(DType::kFloat32, {1, 2, 4}));
  ExpectError([&] {
    BuildDistillationLoss(scope, {.teacher_logits = x, .teacher_boxes = b, .student_logits = x,
                                  .student_boxes = b, .old_columns = 3, .soft_targets = true,
                                  .temperature = 0});
  }, Code::kInvalidArgument, "the temperature must be above 0, got 0");
}

TEST_CASE("Knowledge distillation: the teacher bounded regression loss, and its gradient", "[incremental]") {
  Scope scope = Scope::NewRootScope();
  Output student = ops::Placeholder(scope.WithOpName("student"), DType::kFloat32, {1, 3, 4});
  Output teacher = ops::Placeholder(scope.WithOpName("teacher"), DType::kFloat32, {1, 3, 4});
  Output targets = ops::Placeholder(scope.WithOpName("targets"), DType::kFloat32, {1, 3, 4});
  Output positive = ops::Placeholder(scope.WithOpName("positive"), DType::kFloat32, {1, 3});
  TeacherBoundedInputs inputs{.student_boxes = student, .teacher_boxes = teacher, .box_targets = targets,
                              .positive = positive};
  Output plain = TeacherBoundedRegressionLoss(scope, inputs);
  inputs.margin = 3.5f;
  Output margined = TeacherBoundedRegressionLoss(scope, inputs);
  // Anchor 0, positive: the student is 2 off in x (e_s 4), the teacher 1
  // off (e_t 1): counted. Anchor 1, positive: the student 1 off (e_s 1), the
  // teacher 2 off (e_t 4): better than its teacher, not counted unless the
  // margin (3.5) asks for more. Anchor 2 is background: never counted.
  FeedList feeds{{student, Tensor::FromVector<float>({2, 0, 0, 0, 0, 1, 0, 0, 9, 9, 9, 9}, Shape{1, 3, 4})},
                 {teacher, Tensor::FromVector<float>({1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0}, Shape{1, 3, 4})},
                 {targets, Tensor::Zeros(DType::kFloat32, {1, 3, 4})},
                 {positive, Tensor::FromVector<float>({1, 1, 0}, Shape{1, 3})}};
  Session session(scope);
  std::vector<Tensor> got = session.Run(feeds, {plain, margined});
  CHECK(got[0].scalar<float>() == Approx(4.0f / 2));        // over the 2 positives
  CHECK(got[1].scalar<float>() == Approx((4.0f + 1) / 2));  // e_s 1 + 3.5 > e_t 4
  std::vector<Output> grads = autodiff::AddGradients(scope, {plain}, {student, teacher, targets});
  REQUIRE(grads[0].valid());
  CHECK(!grads[1].valid());
  CHECK(!grads[2].valid());
  Tensor g = session.Run(feeds, {grads[0]})[0];
  // d/ds of (s - y)^2 / 2 on anchor 0's x: 2 * 2 / 2; nothing elsewhere.
  const std::vector<float> expected{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  CHECK(std::vector<float>(g.data<float>(), g.data<float>() + 12) == expected);
  ExpectError([&] { TeacherBoundedRegressionLoss(scope, {student, teacher, targets, positive, -1}); },
              Code::kInvalidArgument, "the margin must be 0 or more, got -1");
}

// Fine-grained feature imitation (models/detection/feature_imitation.h): the
// mask keeps the anchors near each object as Wang et al. define them; the
// loss is the squared difference inside the cells' mask over twice their
// count, its gradient matches finite differences, and none reaches the
// teacher. The Pearson form (Cao et al. 2022) compares the maps standardised
// per channel, so it ignores the teacher's scale and offset.
#include <catch2/catch.hpp>

#include <cmath>

#include "autodiff/gradients.h"
#include "graph/session.h"
#include "models/detection/feature_imitation.h"
#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::models::detection;

namespace {

std::vector<float> Values(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.NumElements()}; }

TEST_CASE("Feature imitation: the mask holds the anchors within psi of each object's best IoU", "[imitation]") {
  // Anchors (y1, x1, y2, x2): one on the object, one half on it, one off it.
  std::vector<float> anchors{0, 0, 0.5f, 0.5f, 0, 0.25f, 0.5f, 0.75f, 0.5f, 0.5f, 1, 1};
  std::vector<std::vector<float>> boxes{{0, 0, 0.5f, 0.5f}, {}};
  // IoUs with the first image's object: 1, 1/3, 0: above 0.5 the first only,
  // above 0.3 (psi 0.3) the second too.
  CHECK(Values(ImitationMask(anchors, boxes)) == std::vector<float>{1, 0, 0, 0, 0, 0});
  CHECK(Values(ImitationMask(anchors, boxes, 0.3)) == std::vector<float>{1, 1, 0, 0, 0, 0});
  // The threshold follows each object's own best IoU: a small object whose
  // best anchor overlaps it by 1/4 still imitates there.
  std::vector<std::vector<float>> small{{0, 0, 0.25f, 0.25f}};
  CHECK(Values(ImitationMask(anchors, small)) == std::vector<float>{1, 0, 0});
  CHECK_THROWS_WITH(ImitationMask(anchors, {{0, 0, 1}}), Catch::Contains("image 0 has 3 box floats"));
}

struct TwoMaps {
  Scope scope = Scope::NewRootScope();
  Output s1, s2, t1, t2, mask;
  FeatureImitation imitation;
  TwoMaps() {
    // Map 1: 2x2 cells, map 2: 1x1; 2 anchors per cell: 10 anchors.
    s1 = ops::Placeholder(scope.WithOpName("s1"), DType::kFloat32, {1, 2, 2, 3});
    s2 = ops::Placeholder(scope.WithOpName("s2"), DType::kFloat32, {1, 1, 1, 3});
    t1 = ops::Placeholder(scope.WithOpName("t1"), DType::kFloat32, {1, 2, 2, 4});
    t2 = ops::Placeholder(scope.WithOpName("t2"), DType::kFloat32, {1, 1, 1, 4});
    mask = ops::Placeholder(scope.WithOpName("mask"), DType::kFloat32, {-1, 10});
    imitation = BuildFeatureImitationLoss(scope, {.student_maps = {s1, s2}, .teacher_maps = {t1, t2},
                                                  .anchor_mask = mask, .anchors_per_cell = 2});
  }
};

TEST_CASE("Feature imitation: the loss over the masked cells, and its gradient", "[imitation]") {
  TwoMaps m;
  Session session(m.scope);
  session.Run({}, {}, {ops::GlobalVariablesInitializer(m.scope)});
  REQUIRE(m.imitation.adapter_variables.size() == 4);
  // Cells of map 1: anchors (0,1), (2,3), (4,5), (6,7); map 2: (8,9).
  // Masked: cell 0 of map 1 (anchor 1), cell 3 (both) and map 2's cell.
  Tensor mask = Tensor::FromVector<float>({0, 1, 0, 0, 0, 0, 1, 1, 1, 0}, {1, 10});
  FeedList feeds{{m.s1, testing::RandomTensor(DType::kFloat32, {1, 2, 2, 3}, 1)},
                 {m.s2, testing::RandomTensor(DType::kFloat32, {1, 1, 1, 3}, 2)},
                 {m.t1, testing::RandomTensor(DType::kFloat32, {1, 2, 2, 4}, 3)},
                 {m.t2, testing::RandomTensor(DType::kFloat32, {1, 1, 1, 4}, 4)},
                 {m.mask, mask}};
  // The adapters' outputs, computed here from their weights.
  std::vector<Tensor> w = session.Run({}, {m.imitation.adapter_variables[0], m.imitation.adapter_variables[1],
                                           m.imitation.adapter_variables[2], m.imitation.adapter_variables[3]});
  auto adapted = [&](const Tensor& x, int64_t cell, int64_t c, const Tensor& filter, const Tensor& bias) {
    float sum = bias.data<float>()[c];
    for (int64_t k = 0; k < 3; ++k) sum += x.data<float>()[cell * 3 + k] * filter.data<float>()[k * 4 + c];
    return sum;
  };
  auto squared = [&](const Tensor& s, const Tensor& t, int64_t cell, const Tensor& filter, const Tensor& bias) {
    double sum = 0;
    for (int64_t c = 0; c < 4; ++c) {
      const double d = adapted(s, cell, c, filter, bias) - t.data<float>()[cell * 4 + c];
      sum += d * d;
    }
    return sum;
  };
  const Tensor &s1 = feeds[0].second, &s2 = feeds[1].second, &t1 = feeds[2].second, &t2 = feeds[3].second;
  const double expected =
      (squared(s1, t1, 0, w[0], w[1]) + squared(s1, t1, 3, w[0], w[1]) + squared(s2, t2, 0, w[2], w[3])) / (2 * 3);
  CHECK(session.Run(feeds, {m.imitation.loss})[0].scalar<float>() == Approx(expected).epsilon(1e-5));

  std::vector<Output> grads = autodiff::AddGradients(m.scope, {m.imitation.loss}, {m.s1, m.t1});
  REQUIRE(grads[0].valid());
  CHECK(!grads[1].valid());  // the teacher is not trained
  Tensor g = session.Run(feeds, {grads[0]})[0];
  // Finite differences on every element of the first student map.
  for (int64_t i = 0; i < 12; ++i) {
    auto loss_at = [&](float delta) {
      FeedList moved = feeds;
      moved[0].second = s1.Clone();
      moved[0].second.data<float>()[i] += delta;
      return static_cast<double>(session.Run(moved, {m.imitation.loss})[0].scalar<float>());
    };
    const double numeric = (loss_at(1e-2f) - loss_at(-1e-2f)) / 2e-2;
    INFO(i);
    CHECK(g.data<float>()[i] == Approx(numeric).margin(2e-3));
  }
  // Unmasked cells get no gradient: cells 1 and 2 of map 1.
  for (int64_t i = 3; i < 9; ++i) CHECK(g.data<float>()[i] == 0.0f);
  // An empty mask: no cell imitates, the loss is 0 (Np is at least 1).
  feeds[4].second = Tensor::Zeros(DType::kFloat32, {1, 10});
  CHECK(session.Run(feeds, {m.imitation.loss})[0].scalar<float>() == 0.0f);
}

// The 1x1 adapter's output computed here: [cells, 4] from [cells, in].
Tensor Adapted(const Tensor& student, const Tensor& filter, const Tensor& bias) {
  const int64_t in = student.shape().dim(3), cells = student.NumElements() / in;
  Tensor out = Tensor::Zeros(DType::kFloat32, {student.shape().dim(0), student.shape().dim(1),
                                               student.shape().dim(2), 4});
  for (int64_t i = 0; i < cells; ++i)
    for (int64_t c = 0; c < 4; ++c) {
      float sum = bias.data<float>()[c];
      for (int64_t k = 0; k < in; ++k) sum += student.data<float>()[i * in + k] * filter.data<float>()[k * 4 + c];
      out.data<float>()[i * 4 + c] = sum;
    }
  return out;
}

// The Pearson form's loss computed here: each channel of the adapted
// student and of the teacher standardised over the batch and cells, then
// the mean squared difference over two.
double PearsonLoss(const Tensor& adapted, const Tensor& teacher) {
  const int64_t cells = teacher.NumElements() / 4;
  auto standardised = [&](const Tensor& x) {
    std::vector<double> z(cells * 4);
    for (int64_t c = 0; c < 4; ++c) {
      double mean = 0, variance = 0;
      for (int64_t i = 0; i < cells; ++i) mean += x.data<float>()[i * 4 + c] / static_cast<double>(cells);
      for (int64_t i = 0; i < cells; ++i) {
        const double d = x.data<float>()[i * 4 + c] - mean;
        variance += d * d / static_cast<double>(cells);
      }
      const double deviation = std::sqrt(variance + 1e-5);
      for (int64_t i = 0; i < cells; ++i) z[i * 4 + c] = (x.data<float>()[i * 4 + c] - mean) / deviation;
    }
    return z;
  };
  const std::vector<double> a = standardised(adapted), t = standardised(teacher);
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += (a[i] - t[i]) * (a[i] - t[i]);
  return sum / static_cast<double>(a.size()) / 2;
}

TEST_CASE("Feature imitation, Pearson form: standardised maps on every cell, and the gradient", "[imitation]") {
  Scope scope = Scope::NewRootScope();
  // Two images of 2x2 cells: each channel is standardised over 8 cells.
  Output student = ops::Placeholder(scope.WithOpName("s"), DType::kFloat32, {2, 2, 2, 3});
  Output teacher = ops::Placeholder(scope.WithOpName("t"), DType::kFloat32, {2, 2, 2, 4});
  FeatureImitation imitation = BuildFeatureImitationLoss(
      scope, {.student_maps = {student}, .teacher_maps = {teacher}, .anchor_mask = {}, .anchors_per_cell = 6,
              .form = ImitationLoss::kPearson});
  Session session(scope);
  session.Run({}, {}, {ops::GlobalVariablesInitializer(scope)});
  REQUIRE(imitation.adapter_variables.size() == 2);
  std::vector<Tensor> w = session.Run({}, {imitation.adapter_variables[0], imitation.adapter_variables[1]});
  const Tensor s = testing::RandomTensor(DType::kFloat32, {2, 2, 2, 3}, 5);
  const Tensor t = testing::RandomTensor(DType::kFloat32, {2, 2, 2, 4}, 6);
  const Tensor adapted = Adapted(s, w[0], w[1]);
  auto loss_with = [&](const Tensor& student_map, const Tensor& teacher_map) {
    return static_cast<double>(
        session.Run({{student, student_map}, {teacher, teacher_map}}, {imitation.loss})[0].scalar<float>());
  };
  const double expected = PearsonLoss(adapted, t);
  CHECK(expected > 0.1);
  CHECK(loss_with(s, t) == Approx(expected).epsilon(1e-4));

  // Only the teacher's pattern counts: scaled and shifted (3t + 5), it
  // teaches the same, and a teacher equal to the adapted student up to scale
  // and offset (every channel's r = 1) leaves nothing to learn.
  auto affine = [](Tensor x, float scale, float offset) {
    for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = scale * x.data<float>()[i] + offset;
    return x;
  };
  CHECK(loss_with(s, affine(t.Clone(), 3, 5)) == Approx(expected).epsilon(1e-4));
  CHECK(loss_with(s, affine(adapted.Clone(), 2, -1)) == Approx(0).margin(1e-5));

  std::vector<Output> grads = autodiff::AddGradients(scope, {imitation.loss}, {student, teacher});
  REQUIRE(grads[0].valid());
  CHECK(!grads[1].valid());  // the teacher is not trained
  const Tensor g = session.Run({{student, s}, {teacher, t}}, {grads[0]})[0];
  for (int64_t i = 0; i < s.NumElements(); ++i) {
    auto loss_at = [&](float delta) {
      Tensor moved = s.Clone();
      moved.data<float>()[i] += delta;
      return loss_with(moved, t);
    };
    INFO(i);
    CHECK(g.data<float>()[i] == Approx((loss_at(1e-2f) - loss_at(-1e-2f)) / 2e-2).margin(2e-3));
  }
}

TEST_CASE("Feature imitation: maps of different cells are refused", "[imitation]") {
  Scope scope = Scope::NewRootScope();
  Output s = ops::Placeholder(scope.WithOpName("s"), DType::kFloat32, {1, 2, 2, 3});
  Output t = ops::Placeholder(scope.WithOpName("t"), DType::kFloat32, {1, 3, 3, 4});
  Output mask = ops::Placeholder(scope.WithOpName("mask"), DType::kFloat32, {-1, 8});
  CHECK_THROWS_WITH(BuildFeatureImitationLoss(scope, {.student_maps = {s}, .teacher_maps = {t}, .anchor_mask = mask}),
                    Catch::Contains("map 0 of the student is [1,2,2,3] and the teacher's [1,3,3,4]"));
  CHECK_THROWS_WITH(BuildFeatureImitationLoss(scope, {.student_maps = {s, s}, .teacher_maps = {t}, .anchor_mask = mask}),
                    Catch::Contains("2 student maps but 1 teacher maps"));
}

}  // namespace

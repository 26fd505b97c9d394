// Detection ops against naive references: NonMaxSuppressionV5 against the
// O(n^2) greedy loop on random boxes full of score ties, duplicates,
// swapped corners and empty boxes; Soft-NMS, CombinedNonMaxSuppression and
// BoxIou on hand-computed cases; TopKV2 against std::stable_sort; errors
// naming the node.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include <catch2/catch.hpp>

#include "ops/detection.h"
#include "ops/state.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

struct NmsCase {
  std::vector<float> boxes, scores;
  int32_t max_output = 0;
  float iou = 0.5f, score_threshold = -std::numeric_limits<float>::infinity(), sigma = 0;
  bool pad = false;
};

std::vector<Tensor> RunNms(const NmsCase& c) {
  OpRun run;
  run.op = "NonMaxSuppressionV5";
  auto n = static_cast<int64_t>(c.scores.size());
  run.inputs = {Tensor::FromVector(c.boxes, Shape{n, 4}), Tensor::FromVector(c.scores),
                Tensor::Scalar<int32_t>(c.max_output), Tensor::Scalar(c.iou),
                Tensor::Scalar(c.score_threshold), Tensor::Scalar(c.sigma)};
  run.attrs = {{"pad_to_max_output_size", c.pad}};
  return RunOp(run);
}

// TensorFlow's IoU, written out again: corners sorted, 0 for empty boxes.
float NaiveIou(const float* a, const float* b) {
  float ay0 = std::min(a[0], a[2]), ay1 = std::max(a[0], a[2]);
  float ax0 = std::min(a[1], a[3]), ax1 = std::max(a[1], a[3]);
  float by0 = std::min(b[0], b[2]), by1 = std::max(b[0], b[2]);
  float bx0 = std::min(b[1], b[3]), bx1 = std::max(b[1], b[3]);
  float area_a = (ay1 - ay0) * (ax1 - ax0), area_b = (by1 - by0) * (bx1 - bx0);
  if (area_a <= 0 || area_b <= 0) return 0;
  float inter = std::max(std::min(ay1, by1) - std::max(ay0, by0), 0.0f) *
                std::max(std::min(ax1, bx1) - std::max(ax0, bx0), 0.0f);
  return inter / (area_a + area_b - inter);
}

// The O(n^2) greedy loop: by score (stable: equal scores in index order),
// keep a box unless it overlaps a kept one by more than the threshold.
std::vector<int32_t> NaiveNms(const NmsCase& c) {
  std::vector<int32_t> order;
  for (int32_t i = 0; i < static_cast<int32_t>(c.scores.size()); ++i)
    if (c.scores[i] > c.score_threshold) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return c.scores[a] > c.scores[b]; });
  std::vector<int32_t> kept;
  for (int32_t i : order) {
    if (static_cast<int32_t>(kept.size()) >= c.max_output) break;
    bool suppressed = false;
    for (int32_t j : kept) suppressed |= NaiveIou(&c.boxes[4 * i], &c.boxes[4 * j]) > c.iou;
    if (!suppressed) kept.push_back(i);
  }
  return kept;
}

// Coordinates on a coarse grid (duplicates, shared edges, empty boxes,
// swapped corners) and a few distinct scores (ties), or all continuous.
NmsCase RandomCase(std::mt19937& rng, int64_t n, bool coarse) {
  NmsCase c;
  std::uniform_int_distribution<int> cell(0, 8), level(0, 4);
  std::uniform_real_distribution<float> unit(0, 1);
  for (int64_t i = 0; i < n; ++i) {
    for (int k = 0; k < 4; ++k) c.boxes.push_back(coarse ? cell(rng) * 0.125f : unit(rng));
    c.scores.push_back(coarse ? level(rng) * 0.25f : unit(rng));
  }
  const float ious[] = {0.0f, 0.3f, 0.5f, 0.7f, 1.0f};
  c.iou = ious[std::uniform_int_distribution<int>(0, 4)(rng)];
  c.max_output = std::uniform_int_distribution<int32_t>(0, static_cast<int32_t>(n) + 2)(rng);
  if (unit(rng) < 0.3f) c.score_threshold = 0.25f;
  return c;
}

void ExpectMatchesNaive(const NmsCase& c) {
  auto out = RunNms(c);
  std::vector<int32_t> expected = NaiveNms(c);
  CHECK(out[0].ToVector<int32_t>() == expected);
  CHECK(out[2].scalar<int32_t>() == static_cast<int32_t>(expected.size()));
  std::vector<float> scores;
  for (int32_t i : expected) scores.push_back(c.scores[i]);
  CHECK(out[1].ToVector<float>() == scores);
}

}  // namespace

TEST_CASE("NonMaxSuppressionV5 keeps exactly the naive loop's boxes", "[detection]") {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 300; ++trial) {
    int64_t n = std::uniform_int_distribution<int64_t>(0, 60)(rng);
    NmsCase c = RandomCase(rng, n, /*coarse=*/trial % 3 != 0);
    if (trial % 10 == 9 && n > 3) {
      // Non-finite boxes have IoU 0 or NaN with all: they never suppress.
      const float inf = std::numeric_limits<float>::infinity();
      c.boxes[0] = std::nanf(""), c.boxes[6] = inf, c.boxes[9] = -inf, c.boxes[14] = 1e30f;
      c.boxes[12] = -1e30f, c.scores[1] = std::nanf("");
    }
    INFO("trial " << trial << ", " << n << " boxes, iou " << c.iou << ", max " << c.max_output);
    ExpectMatchesNaive(c);
  }
}

TEST_CASE("NonMaxSuppressionV5 on thousands of boxes of mixed sizes", "[detection]") {
  // Many small boxes, some spanning the whole scene: the grid's large-box and
  // wide-candidate paths as well as its cells.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> at(0, 100), small(0.5f, 6), big(20, 120), unit(0, 1);
  for (int64_t n : {500, 3000}) {
    NmsCase c;
    for (int64_t i = 0; i < n; ++i) {
      float y = at(rng), x = at(rng), h = i % 50 == 0 ? big(rng) : small(rng);
      float w = i % 70 == 0 ? big(rng) : small(rng);
      c.boxes.insert(c.boxes.end(), {y, x, y + h, x + w});
      c.scores.push_back(std::round(unit(rng) * 20) / 20);
    }
    c.max_output = static_cast<int32_t>(n);
    for (float iou : {0.0f, 0.3f, 0.7f}) {
      c.iou = iou;
      ExpectMatchesNaive(c);
    }
  }
}

TEST_CASE("NonMaxSuppressionV5 score threshold, max_output_size and padding", "[detection]") {
  NmsCase c;
  c.boxes = {0, 0, 1, 1, 0, 0, 1, 0.9f, 5, 5, 6, 6, 9, 9, 8, 8, 3, 3, 3, 4};
  c.scores = {0.6f, 0.9f, 0.5f, 0.5f, 0.4f};
  c.max_output = 10;
  c.score_threshold = 0.5f;  // kept only when > 0.5: box 0 and box 1
  auto out = RunNms(c);
  CHECK(out[0].ToVector<int32_t>() == std::vector<int32_t>{1});  // IoU(0, 1) = 0.9 suppresses 0
  c.score_threshold = 0.0f;
  out = RunNms(c);
  // Ties 2, 3 in index order; box 3 has swapped corners; box 4 is empty.
  CHECK(out[0].ToVector<int32_t>() == std::vector<int32_t>{1, 2, 3, 4});
  c.max_output = 2;
  CHECK(RunNms(c)[0].ToVector<int32_t>() == std::vector<int32_t>{1, 2});
  c.max_output = 6;
  c.pad = true;
  out = RunNms(c);
  CHECK(out[0].ToVector<int32_t>() == std::vector<int32_t>{1, 2, 3, 4, 0, 0});
  CHECK(out[1].ToVector<float>() == std::vector<float>{0.9f, 0.5f, 0.5f, 0.4f, 0, 0});
  CHECK(out[2].scalar<int32_t>() == 4);
  c.max_output = 0;
  CHECK(RunNms(c)[0].NumElements() == 0);
}

TEST_CASE("NonMaxSuppressionV5 Soft-NMS re-weights and re-sorts", "[detection]") {
  // IoU(A, B) = 0.5, C far away. sigma = 0.5: B's 0.8 becomes
  // 0.8 exp(-0.5^2 / (2 * 0.5)) = 0.623 after A is kept, so C (0.7) goes
  // first; iou_threshold plays no part.
  NmsCase c;
  c.boxes = {0, 0, 1, 1, 0, 0, 1, 0.5f, 2, 2, 3, 3};
  c.scores = {0.9f, 0.8f, 0.7f};
  c.max_output = 3;
  c.iou = 0.1f;
  c.sigma = 0.5f;
  auto out = RunNms(c);
  CHECK(out[0].ToVector<int32_t>() == std::vector<int32_t>{0, 2, 1});
  ExpectClose(out[1], Tensor::FromVector<float>({0.9f, 0.7f, 0.8f * std::exp(-0.25f)}));
  c.score_threshold = 0.65f;  // B drops below it and is gone
  CHECK(RunNms(c)[0].ToVector<int32_t>() == std::vector<int32_t>{0, 2});
}

TEST_CASE("NonMaxSuppressionV5 and BoxIou errors name the node", "[detection]") {
  Scope s = Scope::NewRootScope();
  auto boxes = ops::Placeholder(s.WithOpName("boxes"), DType::kFloat32);
  auto scores = ops::Placeholder(s.WithOpName("scores"), DType::kFloat32);
  auto nms = ops::NonMaxSuppressionV5(s.WithOpName("nms"), boxes, scores, 3, 0.5f, 0.0f, 0.0f);
  auto run = [&](Tensor b, Tensor sc) {
    Session(s).Run({{boxes, b}, {scores, sc}}, {nms.selected_indices});
  };
  Tensor three = Tensor::Zeros(DType::kFloat32, {3});
  ExpectError([&] { run(Tensor::Zeros(DType::kFloat32, {3, 5}), three); },
              Code::kInvalidArgument, "NonMaxSuppressionV5 'nms': boxes must be [num_boxes, 4]");
  Tensor two = Tensor::Zeros(DType::kFloat32, {2});
  ExpectError([&] { run(Tensor::Zeros(DType::kFloat32, {3, 4}), two); },
              Code::kInvalidArgument,
              "NonMaxSuppressionV5 'nms': scores must be [num_boxes] = [3]");
  auto known = ops::Placeholder(s.WithOpName("known"), DType::kFloat32, {2, 3});
  ExpectError([&] { ops::BoxIou(s.WithOpName("iou"), known, known); }, Code::kInvalidArgument,
              "BoxIou 'iou': boxes_a must have 4 coordinates");
  auto bad = ops::NonMaxSuppressionV5(s.WithOpName("bad"), boxes, scores, 3, 1.5f, 0.0f, 0.0f);
  ExpectError([&] { Session(s).Run({{boxes, Tensor::Zeros(DType::kFloat32, {1, 4})},
                                    {scores, Tensor::Zeros(DType::kFloat32, {1})}},
                                   {bad.selected_indices}); },
              Code::kInvalidArgument, "NonMaxSuppressionV5 'bad': iou_threshold must be in [0, 1]");
}

TEST_CASE("BoxIou on hand-computed boxes", "[detection]") {
  // a1 has swapped corners; b1 is empty.
  Tensor a = Tensor::FromVector<float>({0, 0, 2, 2, 1, 1, 0, 0}, {2, 4});
  Tensor b = Tensor::FromVector<float>({1, 1, 3, 3, 0, 0, 0, 5, 0, 0, 1, 1}, {3, 4});
  ExpectClose(Run("BoxIou", {a, b}),
              Tensor::FromVector<float>({1.0f / 7, 0, 0.25f, 0, 0, 1}, {2, 3}));
  CHECK(Run("BoxIou", {a, Tensor::Zeros(DType::kFloat32, {0, 4})}).shape().dims() ==
        std::vector<int64_t>{2, 0});
}

namespace {

std::vector<Tensor> RunCombined(Tensor boxes, Tensor scores, int32_t per_class, int32_t total,
                                bool pad_per_class, bool clip) {
  OpRun run;
  run.op = "CombinedNonMaxSuppression";
  run.inputs = {std::move(boxes), std::move(scores), Tensor::Scalar<int32_t>(per_class),
                Tensor::Scalar<int32_t>(total), Tensor::Scalar(0.5f), Tensor::Scalar(0.2f)};
  run.attrs = {{"pad_per_class", pad_per_class}, {"clip_boxes", clip}};
  return RunOp(run);
}

}  // namespace

TEST_CASE("CombinedNonMaxSuppression on a hand-made batch", "[detection]") {
  // Image 0: IoU(b0, b1) = 0.9; b2 pokes out of [0, 1]. Image 1: b1 has
  // swapped corners and ties b0 across classes. iou 0.5, score > 0.2.
  Tensor boxes = Tensor::FromVector<float>(
      {0, 0, 0.5f, 0.5f, 0, 0, 0.5f, 0.45f, 0.5f, 0.5f, 1.2f, 1,
       0, 0, 0.2f, 0.2f, 0.6f, 0.6f, 0.5f, 0.5f, 0, 0, 0, 0},
      {2, 3, 1, 4});
  Tensor scores = Tensor::FromVector<float>({0.9f, 0.1f, 0.8f, 0.7f, 0.3f, 0.6f,
                                             0.1f, 0.5f, 0.5f, 0.0f, 0.0f, 0.0f}, {2, 3, 2});
  // Class 0 keeps b0 (.9) and b2 (.3), class 1 keeps b1 (.7) and b2 (.6):
  // the best 3 are .9, .7, .6. Image 1: (b1, class 0) before (b0, class 1).
  auto out = RunCombined(boxes, scores, 2, 3, false, true);
  ExpectClose(out[0], Tensor::FromVector<float>(
                          {0, 0, 0.5f, 0.5f, 0, 0, 0.5f, 0.45f, 0.5f, 0.5f, 1, 1,
                           0.6f, 0.6f, 0.5f, 0.5f, 0, 0, 0.2f, 0.2f, 0, 0, 0, 0},
                          {2, 3, 4}));
  ExpectClose(out[1], Tensor::FromVector<float>({0.9f, 0.7f, 0.6f, 0.5f, 0.5f, 0}, {2, 3}));
  ExpectClose(out[2], Tensor::FromVector<float>({0, 1, 1, 0, 1, 0}, {2, 3}));
  CHECK(out[3].ToVector<int32_t>() == std::vector<int32_t>{3, 2});
  // No clipping: b2 as given. One per class, padded per class: 2 slots.
  CHECK(RunCombined(boxes, scores, 2, 3, false, false)[0].data<float>()[10] == 1.2f);
  out = RunCombined(boxes, scores, 1, 5, true, true);
  CHECK(out[1].shape().dims() == std::vector<int64_t>{2, 2});
  ExpectClose(out[1], Tensor::FromVector<float>({0.9f, 0.7f, 0.5f, 0.5f}, {2, 2}));
}

TEST_CASE("CombinedNonMaxSuppression with one box per class", "[detection]") {
  // q = 2: anchor 1's class-0 box equals anchor 0's (suppressed), its class-1
  // box is elsewhere (kept).
  Tensor boxes = Tensor::FromVector<float>({0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3},
                                           {1, 2, 2, 4});
  Tensor scores = Tensor::FromVector<float>({0.9f, 0.8f, 0.7f, 0.6f}, {1, 2, 2});
  auto out = RunCombined(boxes, scores, 5, 4, false, false);
  ExpectClose(out[0], Tensor::FromVector<float>({0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 0, 0},
                                                {1, 4, 4}));
  ExpectClose(out[2], Tensor::FromVector<float>({0, 1, 1, 0}, {1, 4}));
  CHECK(out[3].scalar<int32_t>() == 3);
  ExpectError([&] { RunCombined(Tensor::Zeros(DType::kFloat32, {1, 2, 3, 4}), scores, 5, 4, false,
                                false); },
              Code::kInvalidArgument, "CombinedNonMaxSuppression 'op': boxes [1,2,3,4] must have");
}

namespace {

// The first k of a stable descending sort of each row.
template <typename T>
std::pair<Tensor, Tensor> NaiveTopK(const Tensor& x, int64_t k) {
  int64_t n = x.dim(x.rank() - 1), rows = x.NumElements() / n;
  std::vector<T> values;
  std::vector<int32_t> indices;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    const T* row = x.data<T>() + r * n;
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    for (int64_t j = 0; j < k; ++j) values.push_back(row[order[j]]), indices.push_back(order[j]);
  }
  std::vector<int64_t> dims = x.shape().dims();
  dims.back() = k;
  return {Tensor::FromVector(values, Shape(dims)), Tensor::FromVector(indices, Shape(dims))};
}

}  // namespace

TEST_CASE("TopKV2 matches a stable sort, ties by index", "[detection]") {
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}) {
    // Integers in [0, 4]: every row is full of ties.
    Tensor x = RandomTensor(DType::kFloat64, {3, 2, 17}, 9, 0, 4.49).CastTo(DType::kInt32);
    x = x.CastTo(dtype);
    for (int32_t k : {0, 1, 5, 17}) {
      INFO(DTypeName(dtype) << " k = " << k);
      OpRun run;
      run.op = "TopKV2";
      run.inputs = {x, Tensor::Scalar<int32_t>(k)};
      auto out = RunOp(run);
      Dispatch<float, double, int32_t, int64_t>(dtype, "test", [&]<typename T>() {
        auto [values, indices] = NaiveTopK<T>(x, k);
        ExpectEqual(out[0], values);
        ExpectEqual(out[1], indices);
      });
    }
  }
}

TEST_CASE("TopKV2 errors name the node", "[detection]") {
  Tensor x = Tensor::Zeros(DType::kFloat32, {2, 3});
  Scope s = Scope::NewRootScope();
  auto input = ops::Placeholder(s.WithOpName("x"), DType::kFloat32);
  auto k = ops::Placeholder(s.WithOpName("k"), DType::kInt32);
  auto top = ops::TopKV2(s.WithOpName("top"), input, k);
  auto run = [&](int32_t kv) {
    Session(s).Run({{input, x}, {k, Tensor::Scalar<int32_t>(kv)}}, {top.values});
  };
  ExpectError([&] { run(4); }, Code::kInvalidArgument,
              "TopKV2 'top': k = 4 is more than the 3 entries of the last dimension of "
              "input [2,3]");
  ExpectError([&] { run(-1); }, Code::kInvalidArgument, "TopKV2 'top': k must be non-negative");
  auto known = ops::Placeholder(s.WithOpName("known"), DType::kFloat32, {2, 3});
  ExpectError([&] { ops::TopKV2(s.WithOpName("static"), known, 5); }, Code::kInvalidArgument,
              "TopKV2 'static': k = 5 is more than the 3 entries");
}

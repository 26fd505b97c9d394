// models/data/detection_pipeline.h on real PNG files in a scratch directory:
// white rectangles on black images, so that a batch's boxes can be checked
// against its pixels after augmentation; sharding, resuming, variable box
// counts, anchor targets and named errors.
#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include <catch2/catch.hpp>

#include "models/data/detection_pipeline.h"
#include "models/data/image.h"
#include "tests/models/checkpoint_test_util.h"

using namespace dflow;
using namespace dflow::models;
using dflow::testing::ExpectError;
using dflow::testing::ScratchDir;
using dflow::testing::WriteBytes;

namespace {

// One image: its size and white rectangles (x, y, w, h; whole pixels).
struct PipelineScene {
  int64_t height = 0, width = 0;
  std::vector<BoxXYWH> rects;
};

// Writes scene i as "image<i>.png" and annotates each rectangle, the
// categories alternating between ids 5 and 9 (labels 1 and 2).
DetectionDataset WriteScenes(const ScratchDir& dir, const std::vector<PipelineScene>& scenes) {
  DetectionDataset d;
  d.categories = {{5, "five"}, {9, "nine"}};
  for (size_t i = 0; i < scenes.size(); ++i) {
    const PipelineScene& s = scenes[i];
    Tensor pixels(DType::kUInt8, {s.height, s.width, 3});
    std::fill_n(pixels.data<uint8_t>(), pixels.NumElements(), 0);
    for (const BoxXYWH& r : s.rects)
      for (int64_t y = static_cast<int64_t>(r[1]); y < r[1] + r[3]; ++y)
        std::fill_n(pixels.data<uint8_t>() + (y * s.width + static_cast<int64_t>(r[0])) * 3,
                    static_cast<int64_t>(r[2]) * 3, 255);
    std::string name = "image" + std::to_string(i) + ".png";
    WritePng(dir / name, pixels);
    d.images.push_back({static_cast<int64_t>(100 + i), name, s.width, s.height});
    for (const BoxXYWH& r : s.rects) {
      int64_t id = static_cast<int64_t>(d.annotations.size()) + 1;
      d.annotations.push_back(
          {id, d.images.back().id, id % 2 ? 5 : 9, r, r[2] * r[3], false, false});
    }
  }
  return d;
}

std::vector<DetectionBatch> Take(DetectionPipeline& pipeline, int n) {
  std::vector<DetectionBatch> batches;
  for (int i = 0; i < n; ++i) batches.push_back(*pipeline.Next());
  return batches;
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

// Slot j of the batch is white exactly under its box, up to one pixel at the
// edges. Holds when every image is shrunk (not enlarged) into the batch, so
// bilinear taps one output pixel from an edge are on its side of it.
void CheckBoxCoversWhite(const DetectionBatch& batch, int64_t j, const std::vector<float>& box) {
  const int64_t s = batch.images.dim(1);
  const float* slot = batch.images.data<float>() + j * s * s * 3;
  const double y1 = box[0] * s, x1 = box[1] * s, y2 = box[2] * s, x2 = box[3] * s;
  for (int64_t r = 0; r < s; ++r)
    for (int64_t c = 0; c < s; ++c) {
      const float* p = slot + (r * s + c) * 3;
      bool white = p[0] > 0.9f && p[1] > 0.9f && p[2] > 0.9f;
      double cy = r + 0.5, cx = c + 0.5;
      bool near = cy > y1 - 1 && cy < y2 + 1 && cx > x1 - 1 && cx < x2 + 1;
      bool deep = cy > y1 + 1 && cy < y2 - 1 && cx > x1 + 1 && cx < x2 - 1;
      if (white && !near) FAIL("white pixel (" << r << ", " << c << ") outside its box");
      if (deep && !white) FAIL("pixel (" << r << ", " << c << ") under the box is not white");
    }
}

}  // namespace

TEST_CASE("detection pipeline: augmented images and boxes line up", "[detection_pipeline]") {
  ScratchDir dir("detection_pipeline_align");
  // Every side >= 120 and S = 32: a crop keeps >= 0.3 of a side, so images shrink.
  DetectionDataset d = WriteScenes(dir, {{120, 160, {{10, 15, 60, 40}}},
                                         {150, 130, {{70, 20, 30, 90}}},
                                         {130, 140, {{0, 0, 50, 50}}},
                                         {140, 120, {{40, 60, 80, 80}}}});
  DetectionPipelineOptions o;
  o.image_size = 32, o.batch_size = 2, o.seed = 3;
  o.augment_options.photometric = false;  // keep white white
  DetectionPipeline pipeline(d, dir.path().string(), o);
  std::set<std::vector<float>> distinct;
  for (const DetectionBatch& batch : Take(pipeline, 10)) {
    REQUIRE(batch.images.shape() == Shape{2, 32, 32, 3});
    for (int64_t j = 0; j < 2; ++j) {
      REQUIRE(batch.boxes[j].size() == 4);  // the crop keeps the only object
      CheckBoxCoversWhite(batch, j, batch.boxes[j]);
      distinct.insert(batch.boxes[j]);
    }
  }
  CHECK(distinct.size() > 10);  // 20 draws of 4 objects: the steps did move them
}

TEST_CASE("detection pipeline: without augmentation images are only resized, in dataset order",
          "[detection_pipeline]") {
  ScratchDir dir("detection_pipeline_eval");
  DetectionDataset d = WriteScenes(
      dir, {{120, 160, {{10, 15, 60, 40}}}, {150, 130, {{70, 20, 30, 90}}}, {130, 140, {}}});
  DetectionPipelineOptions o;
  o.image_size = 32, o.batch_size = 2, o.augment = false, o.shuffle = false;
  o.repeat = false, o.drop_remainder = false;
  DetectionPipeline pipeline(d, dir.path().string(), o);
  CHECK(pipeline.batches_per_epoch() == 2);
  DetectionBatch first = *pipeline.Next(), last = *pipeline.Next();
  CHECK_FALSE(pipeline.Next().has_value());
  CHECK(first.image_ids == std::vector<int64_t>{100, 101});
  CHECK(first.original_sizes == std::vector<std::array<int64_t, 2>>{{120, 160}, {150, 130}});
  CHECK_THAT(first.boxes[0], Catch::Matchers::Approx(std::vector<float>{15.0f / 120, 10.0f / 160,
                                                                        55.0f / 120, 70.0f / 160}));
  CHECK(first.labels[0] == std::vector<int32_t>{1});
  CHECK(first.labels[1] == std::vector<int32_t>{2});
  CheckBoxCoversWhite(first, 0, first.boxes[0]);
  CheckBoxCoversWhite(first, 1, first.boxes[1]);
  CHECK(last.images.shape() == Shape{1, 32, 32, 3});
  CHECK(last.boxes[0].empty());
}

TEST_CASE("detection pipeline: shards are disjoint and cover the dataset", "[detection_pipeline]") {
  ScratchDir dir("detection_pipeline_shards");
  DetectionDataset d = WriteScenes(dir, std::vector<PipelineScene>(7, PipelineScene{20, 24, {}}));
  std::multiset<int64_t> seen;
  for (int shard = 0; shard < 3; ++shard) {
    DetectionPipelineOptions o;
    o.image_size = 8, o.batch_size = 2, o.repeat = false, o.drop_remainder = false;
    o.shard_index = shard, o.num_shards = 3;
    DetectionPipeline pipeline(d, dir.path().string(), o);
    while (auto batch = pipeline.Next())
      seen.insert(batch->image_ids.begin(), batch->image_ids.end());
  }
  CHECK(seen == std::multiset<int64_t>{100, 101, 102, 103, 104, 105, 106});
  DetectionPipelineOptions dropping;
  dropping.batch_size = 2, dropping.shard_index = 2, dropping.num_shards = 3;
  // drop_remainder: every shard makes the smallest shard's 7 / 3 = 2 examples, one batch.
  CHECK(DetectionPipeline(d, dir.path().string(), dropping).batches_per_epoch() == 1);
}

TEST_CASE("detection pipeline: start_step resumes with exactly the batches that would have come",
          "[detection_pipeline]") {
  ScratchDir dir("detection_pipeline_resume");
  DetectionDataset d = WriteScenes(dir, {{40, 50, {{5, 5, 20, 20}}},
                                         {50, 40, {{10, 10, 20, 30}}},
                                         {45, 45, {}},
                                         {40, 60, {{0, 0, 60, 40}}},
                                         {50, 50, {{1, 2, 3, 4}}}});
  DetectionPipelineOptions o;
  o.image_size = 24, o.batch_size = 2, o.seed = 11, o.num_parallel_calls = 3;
  DetectionPipeline full(d, dir.path().string(), o);
  std::vector<DetectionBatch> expected = Take(full, 6);  // 2 batches per epoch: 3 epochs
  o.start_step = 3;
  DetectionPipeline resumed(d, dir.path().string(), o);
  for (int i = 3; i < 6; ++i) {
    DetectionBatch batch = *resumed.Next();
    CHECK(batch.step == i);
    CHECK(batch.epoch == i / 2);
    CHECK(batch.image_ids == expected[i].image_ids);
    CHECK(batch.boxes == expected[i].boxes);
    CHECK(batch.labels == expected[i].labels);
    CHECK(SameBytes(batch.images, expected[i].images));
  }
  CHECK_FALSE(SameBytes(expected[0].images, expected[2].images));  // epochs augment afresh
}

TEST_CASE("detection pipeline: images carry 0, 1 or many boxes; crowd objects are left out",
          "[detection_pipeline]") {
  ScratchDir dir("detection_pipeline_counts");
  std::vector<BoxXYWH> many = {
      {0, 0, 5, 5}, {10, 0, 5, 5}, {20, 0, 5, 5}, {0, 10, 5, 5}, {10, 10, 9, 9}};
  DetectionDataset d = WriteScenes(dir, {{30, 30, {}}, {30, 30, {{3, 4, 10, 12}}}, {30, 30, many}});
  d.annotations.push_back({99, 101, 5, {0, 0, 30, 30}, 900, true, false});  // crowd
  DetectionPipelineOptions o;
  o.image_size = 30, o.batch_size = 3, o.augment = false, o.shuffle = false;
  DetectionPipeline pipeline(d, dir.path().string(), o);
  DetectionBatch batch = *pipeline.Next();
  CHECK(batch.labels[0].empty());
  CHECK(batch.labels[1] == std::vector<int32_t>{1});
  CHECK(batch.labels[2] == std::vector<int32_t>{2, 1, 2, 1, 2});
  CHECK(batch.boxes[2].size() == 20);
  CHECK_THAT(batch.boxes[1],
             Catch::Matchers::Approx(std::vector<float>{4.0f / 30, 0.1f, 16.0f / 30, 13.0f / 30}));
}

TEST_CASE("detection pipeline: encode turns each image's boxes into anchor targets",
          "[detection_pipeline]") {
  ScratchDir dir("detection_pipeline_encode");
  DetectionDataset d = WriteScenes(
      dir,
      {{40, 40, {}}, {40, 40, {{0, 0, 20, 20}}}, {40, 40, {{20, 20, 20, 20}, {0, 20, 20, 20}}}});
  const std::vector<float> anchors = {0,    0, 0.5f, 0.5f, 0,    0.5f, 0.5f, 1,  // a 2 x 2 grid
                                      0.5f, 0, 1,    0.5f, 0.5f, 0.5f, 1,    1};
  DetectionPipelineOptions o;
  o.image_size = 16, o.batch_size = 3, o.augment = false, o.shuffle = false;
  o.encode = [&](const detection::GroundTruth& truth) {
    return detection::MatchSsd(anchors, truth);
  };
  o.num_anchors = 4;
  DetectionPipeline pipeline(d, dir.path().string(), o);
  DetectionBatch batch = *pipeline.Next();
  CHECK(batch.box_targets.shape() == Shape{3, 4, 4});
  CHECK(batch.class_targets.shape() == Shape{3, 4});
  CHECK(batch.class_targets.ToVector<int32_t>() ==
        std::vector<int32_t>{0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2});
  CHECK(batch.num_positive == 3);
  auto deltas = batch.box_targets.flat<float>();
  CHECK(std::all_of(deltas.begin(), deltas.end(), [](float v) { return std::abs(v) < 1e-5f; }));
}

TEST_CASE("detection pipeline: a missing or corrupt image fails Next() naming the file",
          "[detection_pipeline]") {
  ScratchDir dir("detection_pipeline_broken");
  DetectionDataset d = WriteScenes(dir, {{20, 20, {}}});
  DetectionPipelineOptions o;
  o.image_size = 8, o.batch_size = 1, o.shuffle = false;
  DetectionDataset broken = d;
  WriteBytes(dir / "broken.png", "\x89PNG not really");
  broken.images[0].file_name = "broken.png";
  DetectionPipeline corrupt(broken, dir.path().string(), o);
  ExpectError([&] { corrupt.Next(); }, Code::kDataLoss, {"broken.png"});
  ExpectError([&] { corrupt.Next(); }, Code::kDataLoss, {"broken.png"});  // stays failed
  DetectionDataset missing = d;
  missing.images[0].file_name = "missing.png";
  DetectionPipeline absent(missing, dir.path().string(), o);
  ExpectError([&] { absent.Next(); }, Code::kNotFound, {"missing.png"});
  DetectionDataset resized = d;
  resized.images[0].width = 30;
  DetectionPipeline wrong_size(resized, dir.path().string(), o);
  ExpectError([&] { wrong_size.Next(); }, Code::kDataLoss, {"image0.png", "dataset says"});
}

TEST_CASE("detection pipeline: bad datasets and options are named errors", "[detection_pipeline]") {
  ScratchDir dir("detection_pipeline_options");
  DetectionDataset d = WriteScenes(dir, {{20, 20, {{2, 2, 5, 5}}}, {20, 20, {}}});
  const std::string root = dir.path().string();
  auto expect = [&](const std::function<void(DetectionPipelineOptions&, DetectionDataset&)>& change,
                    const std::vector<std::string>& parts) {
    DetectionPipelineOptions o;
    o.batch_size = 1;
    DetectionDataset changed = d;
    change(o, changed);
    ExpectError([&] { DetectionPipeline pipeline(changed, root, o); }, Code::kInvalidArgument,
                parts);
  };
  using O = DetectionPipelineOptions;
  using D = DetectionDataset;
  expect(
      [](O&, D& x) {
        x.annotations[0].bbox = {10, 2, 15, 5};
      },
      {"annotation 1", "image0.png", "outside"});
  expect([](O&, D& x) { x.annotations[0].bbox = {-3, 2, 5, 5}; }, {"annotation 1", "image0.png"});
  expect([](O&, D& x) { x.annotations[0].category_id = 7; }, {"annotation 1", "category 7"});
  expect([](O&, D& x) { x.annotations[0].image_id = 55; }, {"annotation 1", "image id 55"});
  expect([](O&, D& x) { x.images.clear(); }, {"no images"});
  expect([](O& o, D&) { o.batch_size = 0; }, {"batch_size"});
  expect([](O& o, D&) { o.batch_size = 3; }, {"batch_size 3", "drop_remainder"});
  expect([](O& o, D&) { o.image_size = 0; }, {"image_size"});
  expect([](O& o, D&) { o.shard_index = 2, o.num_shards = 2; }, {"shard_index"});
  expect([](O& o, D&) { o.augment_options.max_expand_ratio = 0.5; }, {"max_expand_ratio"});
  expect(
      [](O& o, D&) {
        o.encode = [](const detection::GroundTruth&) { return detection::MatchResult{}; };
      },
      {"num_anchors"});
  // A box without area cannot be trained on (evaluation keeps it: it is
  // simply never found).
  auto no_targets = [](const detection::GroundTruth&) { return detection::MatchResult{}; };
  expect(
      [&](O& o, D& x) {
        o.encode = no_targets, o.num_anchors = 3;
        x.annotations[0].bbox = {2, 2, 0, 5};
      },
      {"annotation 1", "image0.png", "zero width or height"});
  D flat = d;
  flat.annotations[0].bbox = {2, 2, 5, 0};
  DetectionPipelineOptions o;
  o.batch_size = 1;
  CHECK_NOTHROW(DetectionPipeline(flat, root, o));
  o.encode = no_targets;
  o.num_anchors = 3;
  DetectionPipeline wrong_targets(d, root, o);
  ExpectError([&] { wrong_targets.Next(); }, Code::kInvalidArgument,
              {"encode gave 0", "num_anchors is 3"});
}

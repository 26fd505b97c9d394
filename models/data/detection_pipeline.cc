// The detection input pipeline; see detection_pipeline.h. The producer
// thread (PrefetchQueue) makes one batch per step; each image of a batch is
// read, augmented and encoded by one task on the decode pool.
#include "models/data/detection_pipeline.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>

#include "models/data/batch_schedule.h"
#include "models/data/image.h"
#include "models/data/prefetch_queue.h"
#include "models/data/seeded_random.h"

namespace dflow::models {

// One image as the decode threads need it. Outside the anonymous namespace
// because DetectionPipeline::State, a type with linkage, holds a vector of it.
struct DetectionImageRecord {
  std::string path;
  int64_t id = 0, height = 0, width = 0;
  std::vector<float> boxes;  // (y1, x1, y2, x2) pixels of its non-crowd objects
  std::vector<int32_t> labels;
};

namespace {

constexpr uint64_t kAugmentStream = 0xA06E;  // one of the seed's independent streams
// COCO's own boxes overshoot their image by a fraction of a pixel now and
// then; such a box is clipped, a box further out is an error.
constexpr double kBoxSlack = 1.0;

AugmentOptions AugmentOf(const DetectionPipelineOptions& o) {
  AugmentOptions augment = o.augment ? o.augment_options : ResizeOnlyOptions(o.image_size);
  augment.image_size = o.image_size;
  return augment;
}

void CheckOptions(const DetectionPipelineOptions& o) {
  CheckLoaderOptions("DetectionPipeline", o);
  DFLOW_REQUIRE(o.image_size >= 1, "DetectionPipeline: image_size must be >= 1, got ",
                o.image_size);
  DFLOW_REQUIRE(!o.encode || o.num_anchors >= 1,
                "DetectionPipeline: encode is set, so num_anchors must be >= 1, got ",
                o.num_anchors);
  CheckAugmentOptions(AugmentOf(o));
}

// Appends the annotation's box (clipped by at most kBoxSlack) and label to
// its image's record; kInvalidArgument when it lies outside the image, or,
// for training (`require_area`), has no width or height (as torchvision's
// detectors refuse such targets: no anchor can match them).
void AddObject(const DetectionObject& a, int32_t label, bool require_area, DetectionImageRecord& r) {
  const auto [x, y, w, h] = a.bbox;
  const bool inside = std::isfinite(x + y + w + h) && w >= 0 && h >= 0 && x >= -kBoxSlack &&
                      y >= -kBoxSlack && x + w <= r.width + kBoxSlack &&
                      y + h <= r.height + kBoxSlack;
  DFLOW_REQUIRE(inside, "DetectionPipeline: annotation ", a.id, " of image '", r.path,
                "' has box [x ", x, ", y ", y, ", w ", w, ", h ", h, "] outside the image's ",
                r.width, "x", r.height, " pixels");
  DFLOW_REQUIRE(!require_area || (w > 0 && h > 0), "DetectionPipeline: annotation ", a.id,
                " of image '", r.path, "' has a box of zero width or height [x ", x, ", y ", y,
                ", w ", w, ", h ", h, "]; a detector cannot be trained on it");
  auto clip = [](double v, int64_t hi) { return static_cast<float>(std::clamp<double>(v, 0, hi)); };
  for (float v : {clip(y, r.height), clip(x, r.width), clip(y + h, r.height), clip(x + w, r.width)})
    r.boxes.push_back(v);
  r.labels.push_back(label);
}

std::vector<DetectionImageRecord> IndexDataset(const DetectionDataset& d, const std::string& root,
                                               bool require_area) {
  DFLOW_REQUIRE(!d.images.empty(), "DetectionPipeline: the dataset has no images");
  std::vector<DetectionImageRecord> records;
  std::map<int64_t, size_t> record_of_id;
  for (const DetectionImage& image : d.images) {
    std::string path = (std::filesystem::path(root) / image.file_name).string();
    DFLOW_REQUIRE(image.width > 0 && image.height > 0, "DetectionPipeline: image '", path,
                  "' has size ", image.width, "x", image.height, " in the dataset");
    DFLOW_REQUIRE(record_of_id.emplace(image.id, records.size()).second,
                  "DetectionPipeline: two images have id ", image.id, " ('", path, "')");
    records.push_back({path, image.id, image.height, image.width, {}, {}});
  }
  std::map<int64_t, int32_t> label_of_category;  // label = 1 + index in categories
  for (size_t i = 0; i < d.categories.size(); ++i)
    label_of_category.emplace(d.categories[i].id, static_cast<int32_t>(i + 1));
  for (const DetectionObject& a : d.annotations) {
    auto record = record_of_id.find(a.image_id);
    DFLOW_REQUIRE(record != record_of_id.end(), "DetectionPipeline: annotation ", a.id,
                  " refers to image id ", a.image_id, ", which the dataset does not have");
    auto label = label_of_category.find(a.category_id);
    DFLOW_REQUIRE(label != label_of_category.end(), "DetectionPipeline: annotation ", a.id,
                  " of image '", records[record->second].path, "' has category ", a.category_id,
                  ", which the dataset does not have");
    if (!a.iscrowd) AddObject(a, label->second, require_area, records[record->second]);
  }
  return records;
}

}  // namespace

struct DetectionPipeline::State {
  State(std::vector<DetectionImageRecord> records_in, DetectionPipelineOptions options_in)
      : records(std::move(records_in)),
        options(std::move(options_in)),
        augment(AugmentOf(options)),
        schedule("DetectionPipeline", ScheduleOf(options),
                 [n = records.size()](int64_t) {
                   std::vector<int64_t> all(n);
                   std::iota(all.begin(), all.end(), int64_t{0});
                   return all;
                 }),
        decoders(options.num_parallel_calls, "detection_pipeline"),
        queue(options.prefetch_batches) {}

  DetectionBatch MakeBatch(int64_t step);
  int64_t Prepare(DetectionBatch& batch, int64_t slot, int64_t record) const;

  const std::vector<DetectionImageRecord> records;
  const DetectionPipelineOptions options;
  const AugmentOptions augment;
  BatchSchedule schedule;  // used by the producer thread only
  ThreadPool decoders;
  PrefetchQueue<DetectionBatch> queue;  // last: destroyed first, stopping the producer
};

DetectionBatch DetectionPipeline::State::MakeBatch(int64_t step) {
  DetectionBatch batch;
  batch.step = step;
  batch.epoch = schedule.EpochOf(step);
  const std::vector<int64_t> examples = schedule.ExamplesOf(step);
  const int64_t b = static_cast<int64_t>(examples.size()), s = options.image_size;
  batch.images = Tensor(DType::kFloat32, Shape{b, s, s, 3});
  batch.boxes.resize(b);
  batch.labels.resize(b);
  if (options.encode) {
    batch.box_targets = Tensor(DType::kFloat32, Shape{b, options.num_anchors, 4});
    batch.class_targets = Tensor(DType::kInt32, Shape{b, options.num_anchors});
  }
  for (int64_t e : examples) {
    batch.image_ids.push_back(records[e].id);
    batch.original_sizes.push_back({records[e].height, records[e].width});
  }
  std::vector<int64_t> positives(examples.size(), 0);
  RunOnPool(decoders, examples.size(), [&](size_t j) {
    if (queue.stopping()) return;  // the batch will be thrown away
    positives[j] = Prepare(batch, static_cast<int64_t>(j), examples[j]);
  });
  batch.num_positive = std::accumulate(positives.begin(), positives.end(), int64_t{0});
  return batch;
}

// Reads, augments and encodes one image into `slot` of the batch; returns
// its number of positive anchors. Runs on a decode thread: it writes only
// its own slot.
int64_t DetectionPipeline::State::Prepare(DetectionBatch& batch, int64_t slot,
                                          int64_t record) const {
  const DetectionImageRecord& r = records[record];
  Tensor pixels = ReadImage(r.path, 3);
  if (pixels.dim(0) != r.height || pixels.dim(1) != r.width)
    Fail(Code::kDataLoss, "DetectionPipeline: image '", r.path, "' is ", pixels.dim(1), "x",
         pixels.dim(0), " pixels but the dataset says ", r.width, "x", r.height);
  // Keyed by (epoch, image), not by step or slot: an image's augmentation
  // does not depend on the shard or batch it lands in.
  SeededRandom random(SeededRandom::Combine({options.seed, static_cast<uint64_t>(batch.epoch),
                                             static_cast<uint64_t>(record), kAugmentStream}));
  const int64_t size = augment.image_size * augment.image_size * 3;
  AugmentedExample example = AugmentInto(pixels, r.boxes, r.labels, augment, random,
                                         batch.images.data<float>() + slot * size);
  int64_t positives = 0;
  if (options.encode) {
    const int64_t a = options.num_anchors;
    detection::MatchResult m = options.encode({example.boxes, example.labels});
    if (static_cast<int64_t>(m.box_targets.size()) != 4 * a ||
        static_cast<int64_t>(m.class_targets.size()) != a)
      Fail(Code::kInvalidArgument, "DetectionPipeline: encode gave ", m.box_targets.size(),
           " box targets and ", m.class_targets.size(), " class targets for image '", r.path,
           "'; num_anchors is ", a, ", so want ", 4 * a, " and ", a);
    std::copy_n(m.box_targets.data(), 4 * a, batch.box_targets.data<float>() + slot * 4 * a);
    std::copy_n(m.class_targets.data(), a, batch.class_targets.data<int32_t>() + slot * a);
    positives = m.num_positive;
  }
  batch.boxes[slot] = std::move(example.boxes);
  batch.labels[slot] = std::move(example.labels);
  return positives;
}

DetectionPipeline::DetectionPipeline(DetectionDataset dataset, std::string root,
                                     DetectionPipelineOptions options) {
  CheckOptions(options);
  const bool training = static_cast<bool>(options.encode);
  state_ = std::make_unique<State>(IndexDataset(dataset, root, training), std::move(options));
  State* state = state_.get();
  state->queue.Start([state](int64_t step) { return state->MakeBatch(step); },
                     state->options.start_step, state->schedule.EndStep(state->options.repeat));
}

DetectionPipeline::~DetectionPipeline() = default;  // the queue joins the producer first

std::optional<DetectionBatch> DetectionPipeline::Next() { return state_->queue.Pop(); }

int64_t DetectionPipeline::batches_per_epoch() const {
  return state_->schedule.batches_per_epoch();
}

}  // namespace dflow::models

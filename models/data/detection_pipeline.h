// The detector's input pipeline: images of a DetectionDataset are read,
// augmented as SSD does (detection_augment.h) or only resized, batched with
// their boxes and, optionally, turned into fixed-size anchor targets on the
// decode threads, then prefetched on a background thread. Shuffling,
// sharding, drop_remainder and resuming at start_step work as in the
// counting pipeline (pipeline.h, batch_schedule.h): the batches are a pure
// function of (dataset, options).
//
// Crowd objects (iscrowd) are left out of the boxes, labels and targets: a
// crowd region is not one object, and SSD matching would make it a positive.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/tensor.h"
#include "models/data/detection_augment.h"
#include "models/data/detection_dataset.h"
#include "models/detection/matching.h"

namespace dflow::models {

struct DetectionPipelineOptions {
  int64_t image_size = 300;        // every image is resized to image_size x image_size
  int64_t batch_size = 8;
  bool augment = true;             // the SSD augmentation (training); false: resize only (eval)
  AugmentOptions augment_options;  // its image_size is replaced by image_size above
  bool shuffle = true, repeat = true, drop_remainder = true;
  int num_parallel_calls = 2, prefetch_batches = 3;
  int shard_index = 0, num_shards = 1;
  uint64_t seed = 1;
  int64_t start_step = 0;
  // Optional: turns one image's normalised (y1,x1,y2,x2) boxes and labels into
  // fixed-size training targets on the decode threads (e.g. MatchSsd with the
  // model's anchors). Empty: no targets. Called from several decode threads
  // at once.
  std::function<detection::MatchResult(const detection::GroundTruth&)> encode;
  int64_t num_anchors = 0;         // A, required with encode
};

struct DetectionBatch {
  Tensor images;  // float32 [B, S, S, 3] in [0, 1]
  // Per image: normalised (y1, x1, y2, x2) after augmentation, 4 per object,
  // and its labels 1..K (label = 1 + index of the category in
  // dataset.categories).
  std::vector<std::vector<float>> boxes;
  std::vector<std::vector<int32_t>> labels;
  Tensor box_targets;    // float32 [B, A, 4] (with encode)
  Tensor class_targets;  // int32 [B, A]: 0 background, >0 label, -1 ignored (with encode)
  int64_t num_positive = 0;                            // sum over the batch (with encode)
  std::vector<int64_t> image_ids;                      // dataset image ids, for evaluation
  std::vector<std::array<int64_t, 2>> original_sizes;  // (height, width) of each source image
  int64_t step = 0, epoch = 0;  // the global batch number (start_step + i), its epoch
};

class DetectionPipeline {
 public:
  // root: the directory that file_names are relative to. Starts the
  // background thread. kInvalidArgument for bad options, an empty dataset,
  // an annotation of an unknown image or category, or a box more than a
  // pixel outside its image (naming the file and the annotation id; boxes
  // within that pixel, as COCO has, are clipped).
  DetectionPipeline(DetectionDataset dataset, std::string root, DetectionPipelineOptions options);
  // Stops and joins the background threads; never blocks on a full queue.
  ~DetectionPipeline();
  DetectionPipeline(const DetectionPipeline&) = delete;
  DetectionPipeline& operator=(const DetectionPipeline&) = delete;

  // The next batch; std::nullopt at the end (repeat = false). An error while
  // preparing a batch (a missing or corrupt image, one whose size is not the
  // dataset's, ...) is rethrown here, naming the file; the pipeline then
  // stays failed.
  std::optional<DetectionBatch> Next();

  // Batches in one epoch of this shard (after drop_remainder).
  int64_t batches_per_epoch() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dflow::models

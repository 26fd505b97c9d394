// What dflow-detect's training paths share (apps/detect/train.cc: one
// process or ring all-reduce; train_ps.cc: parameter servers): the run
// directory's checks, the dataset and each worker's input shard, the feeds
// and metrics of a step, and the lines a run prints at its start.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/common/progress.h"
#include "apps/detect/detector.h"
#include "models/data/detection_pipeline.h"
#include "models/data/exemplars.h"

namespace dflow::detect_app {

std::string CheckpointDir(const TrainSettings& settings);

// A run that another run's settings start (add-class, prune): the seed and
// resources the command was given (threads, input pipeline, checkpoints,
// device, workers), and nothing of the old run's plan (PrepareRun makes the
// new one). `Given` has TrainSettings' fields of those names.
template <typename Given>
void StartNewRun(TrainSettings& s, const Given& given) {
  s.seed = given.seed;
  s.threads = given.threads;
  s.decode_threads = given.decode_threads;
  s.prefetch = given.prefetch;
  s.checkpoint_every = given.checkpoint_every;
  s.keep = given.keep;
  s.device = given.device;
  s.parallel = given.parallel;
  s.session = s.session_start = 0;
  s.total_steps = s.batches_per_epoch = s.train_images = s.train_objects = 0;
}

// What a training process knows before it builds the graph.
struct PreparedRun {
  // The run's training set: --data, joined with the run's exemplar memory
  // when it has one (file names then absolute, `root` empty).
  models::DetectionDataset data;
  std::string root;
  Tensor anchors;                     // the SSD default boxes the pipeline matches against
  std::optional<std::string> latest;  // the run's newest checkpoint, if any (resume needs one)
  std::unique_ptr<models::DetectionPipeline> pipeline;  // this worker's shard from step 0
};
// Checks --out and --resume against the run directory (with workers, the
// chief may have written config.json already), reads the dataset and records
// its classes, plans a new run (batches per epoch, total steps) and lets
// worker 0 alone write config.json. The pipeline checks every image and box
// before the run directory is written.
// `exemplars` (add-class) join the data; without them, the run's memory does.
PreparedRun PrepareRun(TrainSettings& settings, bool resume, int worker, int workers,
                       const models::DatasetPart* exemplars);

// Worker `shard` of `shards` reads its shard of the images from `start_step`
// batches in; every shard makes the same number of batches (drop_remainder),
// so the workers stay in step.
std::unique_ptr<models::DetectionPipeline> OpenPipeline(const TrainSettings& settings, const PreparedRun& run,
                                                        int64_t start_step, int shard, int shards);

// --init-from: the backbone's variables from another checkpoint, renamed by --map.
void InitBackbone(Session& session, const DetectorGraph& graph, const TrainSettings& settings);

// A batch's feeds, and the progress metrics of the fetches {loss, box, class}.
FeedList BatchFeeds(const DetectorGraph& graph, const models::DetectionBatch& batch);
std::vector<TensorName> LossFetches(const DetectorGraph& graph);
// `fetched` starts with LossFetches' tensors (more may follow).
apps::Progress::Metrics LossMetrics(const DetectorGraph& graph, const std::vector<Tensor>& fetched);

// "training ssd-mobilenet SxS (...) on I images ... for N steps".
void PrintPlan(const TrainSettings& settings, const DetectorGraph& graph);

// `--strategy ps` under a cluster: a ps task serves the variables, a worker
// trains its shard through a dist::PsWorker. Returns the process's exit
// code (apps/detect/train_ps.cc).
int TrainWithParameterServers(TrainSettings settings, bool resume, const models::DatasetPart* exemplars);

}  // namespace dflow::detect_app

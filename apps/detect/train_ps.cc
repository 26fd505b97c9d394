// dflow-detect train --strategy ps: parameter-server training of the SSD
// detector (apps/common/ps_trainer.h). The ps tasks hold the variables and
// apply Adam's updates; each worker builds the same graph, reads its own
// shard and pushes its gradients; the chief alone runs the batch-norm
// updates, so the moving statistics are its own, as under ring all-reduce,
// and writes the checkpoints. See docs/detection.md.
#include <chrono>

#include "apps/common/ps_trainer.h"
#include "apps/common/workers.h"
#include "apps/detect/distill.h"
#include "apps/detect/incremental.h"
#include "apps/detect/prune.h"
#include "apps/detect/training.h"

namespace dflow::detect_app {
namespace {

// This worker's shard of images, with their matched box and class targets.
class DetectionInput : public apps::PsInput {
 public:
  DetectionInput(const TrainSettings& settings, const DetectorGraph& graph, PreparedRun& run)
      : settings_(settings), graph_(graph), run_(run) {}

  void Open(int64_t shard_step, int shard, int shards) override {
    // A session's data is read from its own first step.
    const int64_t position = shard_step - settings_.session_start;
    if (position == 0) pipeline_ = std::move(run_.pipeline);
    else pipeline_ = OpenPipeline(settings_, run_, position, shard, shards);
    PrintPlan(settings_, graph_);
  }
  FeedList Next() override {
    batch_ = *pipeline_->Next();
    return BatchFeeds(graph_, batch_);
  }
  int64_t images() const override { return batch_.images.shape().dim(0); }
  apps::Progress::Metrics Metrics(const std::vector<Tensor>& fetched) const override {
    return LossMetrics(graph_, fetched);
  }

 private:
  const TrainSettings& settings_;
  const DetectorGraph& graph_;
  PreparedRun& run_;
  std::unique_ptr<models::DetectionPipeline> pipeline_;
  models::DetectionBatch batch_;
};

void TrainWorker(TrainSettings settings, bool resume, const models::DatasetPart* exemplars,
                 const dist::PsTask& task) {
  apps::CheckPsWorker(settings.parallel, settings.device, task);
  PreparedRun run = PrepareRun(settings, resume, task.task.index, task.num_workers(), exemplars);
  std::unique_ptr<DetectorGraph> graph = BuildTrainingGraph(settings, TrainOp::kNone);
  const DetectorGraph& g = *graph;
  DFLOW_REQUIRE(!g.apply_masks, "train: unstructured pruning keeps its masks in one process or with --strategy ring, "
                                "not with parameter servers");
  // The chief alone runs the batch-norm updates (see the top of this file).
  std::vector<TensorName> fetches = LossFetches(g);
  const std::vector<Output>& batch_norm = g.net.batch_norm_updates;
  if (task.is_chief()) fetches.insert(fetches.end(), batch_norm.begin(), batch_norm.end());
  apps::PsLoopOptions options = apps::PsLoopOptionsFor(settings, resume ? run.latest : std::nullopt, 20);
  options.initialise = [&](Session& session, const Saver& saver) {
    if (!settings.teacher.empty()) InitFromOldModel(session, g, saver, settings);
    if (!settings.init_from.empty()) InitBackbone(session, g, settings);
    if (!settings.pruned_from.empty()) InitFromPruned(session, g, saver, settings);
    if (!settings.distill_from.empty()) InitDistillationTeacher(session, g, saver, settings);
  };
  DetectionInput input(settings, g, run);
  auto start = std::chrono::steady_clock::now();
  apps::TrainPsWorker(task,
                      {.scope = g.scope, .loss = g.loss.loss, .learning_rate = g.learning_rate,
                       .global_step = g.global_step, .variables = g.trained, .fetches = fetches},
                      options, input);
  // A session that reached its last step keeps its exemplars (a stopped one
  // resumes first).
  if (task.is_chief() && settings.session > 0 && LatestStep(settings) == settings.total_steps)
    FinishSession(settings, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

// Ctrl-C: the ps tasks stop serving at once, so the run resumes from the
// chief's last periodic checkpoint (as dflow-count's).
int TrainWithParameterServers(TrainSettings settings, bool resume, const models::DatasetPart* exemplars) {
  // --threads for the ps tasks too: with 1, every sum runs in one order.
  return dist::RunPsTask([&](const dist::PsTask& task) { TrainWorker(settings, resume, exemplars, task); },
                         settings.threads);
}

}  // namespace dflow::detect_app

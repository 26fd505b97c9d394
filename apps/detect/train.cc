// dflow-detect train: trains an SSD detector on a detection dataset, with
// periodic atomic checkpoints, exact resume and RUN/config.json; with
// --workers, data-parallel over a ring all-reduce (apps/common/workers.h) or,
// with --strategy ps, parameter servers (train_ps.cc).
#include <iostream>
#include <memory>

#include "apps/common/model_split.h"
#include "apps/common/training_loop.h"
#include "apps/common/workers.h"
#include "apps/detect/commands.h"
#include "apps/detect/detector.h"
#include "apps/detect/distill.h"
#include "apps/detect/incremental.h"
#include "apps/detect/prune.h"
#include "apps/detect/training.h"
#include "dist/training/data_parallel.h"
#include "models/checkpoint.h"

namespace dflow::detect_app {
namespace {

// This worker's total, box and class loss, then the learning rate; with
// workers, the gradients are averaged first and each worker updates its own
// batch-norm statistics.
std::vector<Tensor> RunStep(Session& session, const DetectorGraph& g, dist::DataParallelStrategy* strategy,
                            const models::DetectionBatch& batch) {
  FeedList feeds = BatchFeeds(g, batch);
  std::vector<TensorName> losses = LossFetches(g);
  losses.push_back(g.learning_rate);
  std::vector<Tensor> out;
  if (!strategy) {
    out = session.Run(feeds, losses, {g.train});
  } else {
    const std::vector<Output>& batch_norm = g.net.batch_norm_updates;
    dist::ReplicatedStep names{.gradients = {g.gradients.begin(), g.gradients.end()},
                               .gradient_feeds = {g.gradient_feeds.begin(), g.gradient_feeds.end()},
                               .apply = {g.train},
                               .extra_fetches = losses,
                               .local_targets = {batch_norm.begin(), batch_norm.end()}};
    out = dist::RunDataParallelStep(session, *strategy, apps::InBackpropOrder(std::move(names)), feeds);
  }
  if (g.apply_masks) session.Run({}, {}, {g.apply_masks});  // the pruned weights back to zero
  return out;
}

// The variables a run starts from: the chief restores the latest checkpoint
// (resume) or initialises them (and the backbone from --init-from); then
// every worker takes the chief's, optimizer slots, batch-norm statistics and
// global step included. Returns the step the run resumes after (0: new).
int64_t StartVariables(Session& session, const DetectorGraph& g, const Saver& saver, const TrainSettings& s,
                       const std::optional<std::string>& resume_from, dist::DataParallelStrategy* strategy) {
  const bool chief = !strategy || strategy->is_chief();
  if (resume_from && chief) {
    saver.Restore(session, *resume_from);
  } else {
    session.Run({}, {}, {g.init});
    if (!resume_from && !s.teacher.empty()) InitFromOldModel(session, g, saver, s);
    if (!resume_from && !s.init_from.empty()) InitBackbone(session, g, s);
    if (!resume_from && !s.pruned_from.empty()) InitFromPruned(session, g, saver, s);
    if (!resume_from && !s.distill_from.empty()) InitDistillationTeacher(session, g, saver, s);
  }
  if (strategy) apps::SynchronizeVariables(session, saver, *strategy);
  if (!resume_from) return 0;
  int64_t start = session.Run({g.global_step})[0].scalar<int64_t>();
  std::cout << "resuming " << (chief ? *resume_from : "the chief's checkpoint") << " at step " << start << "\n";
  return start;
}

// With --split, this worker's session runs on its part tasks
// (apps/common/model_split.h); otherwise in this process.
SessionOptions TrainingSessionOptions(const TrainSettings& settings, const std::optional<apps::ModelSplit>& split) {
  SessionOptions options = split ? split->session : SessionOptions{};
  options.num_threads = settings.threads;
  if (!split && !settings.device.empty()) options.devices = {settings.device};
  return options;
}

int TrainOnSession(TrainSettings& settings, bool resume, PreparedRun& run, const DetectorGraph& trained,
                   Session& session, const apps::TrainingWorkers& workers) {
  Saver saver(trained.scope, SaverOptions{.max_to_keep = settings.keep});
  std::unique_ptr<dist::DataParallelStrategy> strategy;
  if (workers.cluster) strategy = apps::MakeStrategy(settings.parallel, *workers.cluster, trained.trained);
  if (workers.elastic) strategy = apps::MakeElasticStrategy(settings.parallel, *workers.elastic, trained.trained);
  int64_t start =
      StartVariables(session, trained, saver, settings, resume ? run.latest : std::nullopt, strategy.get());
  if (workers.elastic) start = session.Run({trained.global_step})[0].scalar<int64_t>();  // a later joiner's
  PrintPlan(settings, trained);
  apps::StopOnSignals();
  apps::AppTrainingRun<models::DetectionPipeline> training{
      .total_steps = settings.total_steps,
      .checkpoint_every = settings.checkpoint_every,
      .report_every = 20,
      .out = settings.out,
      .checkpoint_dir = CheckpointDir(settings),
      .session = &session,
      .saver = &saver,
      .global_step = trained.global_step,
      .strategy = strategy.get(),
      // PrepareRun's pipeline starts a new run for the prepared rank.
      .input = [&](int64_t from) -> std::unique_ptr<models::DetectionPipeline> {
        const int rank = strategy ? strategy->worker() : 0, ranks = strategy ? strategy->num_workers() : 1;
        std::unique_ptr<models::DetectionPipeline> prepared = std::move(run.pipeline);
        if (prepared && from == 0 && rank == workers.index && ranks == workers.count) return prepared;
        return OpenPipeline(settings, run, from - settings.session_start, rank, ranks);
      },
      .run_step = [&](int64_t step, const models::DetectionBatch& batch, apps::Progress& progress) {
        std::vector<Tensor> out = RunStep(session, trained, strategy.get(), batch);
        progress.Update(step, batch.images.shape().dim(0), LossMetrics(trained, out),
                        {{"lr", out.back().scalar<float>()}});
      }};
  const apps::TrainingLoopResult result = training.Run(start);
  if (settings.session > 0 && !result.stopped && training.chief()) FinishSession(settings, result.seconds);
  return apps::StopSignalled() ? 130 : 0;
}

}  // namespace

int Train(TrainSettings settings, bool resume, const models::DatasetPart* exemplars) {
  CheckSessionDevice(settings.device);  // before the run directory is written
  if (apps::UsesParameterServers(settings.parallel, settings.device))
    return TrainWithParameterServers(std::move(settings), resume, exemplars);
  std::optional<apps::ModelSplit> split = apps::WorkerModelSplit(settings.parallel, settings.device, settings.threads);
  const apps::TrainingWorkers workers = apps::FindTrainingWorkers(settings.parallel, settings.device);
  PreparedRun run = PrepareRun(settings, resume, workers.index, workers.count, exemplars);
  // The schedule reads total_steps.
  const TrainOp train_op = workers.distributed() ? TrainOp::kFedGradients : TrainOp::kMinimize;
  std::unique_ptr<DetectorGraph> graph =
      BuildTrainingGraph(settings, train_op, split ? split->devices : models::ModelPartDevices{});
  try {
    Session session(graph->scope, TrainingSessionOptions(settings, split));
    int code = TrainOnSession(settings, resume, run, *graph, session, workers);
    if (split) apps::StopModelParts(*split, 1);
    return code;
  } catch (...) {
    if (split) apps::StopModelParts(*split, 2);
    throw;
  }
}

}  // namespace dflow::detect_app

// dflow-count train --strategy ps: parameter-server training of the density
// counter. The ps tasks hold the variables and apply the updates; each
// worker builds the same graph, reads its own shard and pushes gradients
// through a dist::PsWorker; the chief (worker 0) writes the checkpoints,
// reading the variables from the ps tasks. See docs/counting.md.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "apps/count/training.h"
#include "autodiff/optimizers.h"
#include "apps/common/workers.h"
#include "dist/training/ps_training.h"
#include "models/checkpoint.h"

namespace dflow::count_app {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

dist::PsMode PsModeOf(const TrainSettings& settings) {
  return apps::PsModeName(settings.parallel) == "async" ? dist::PsMode::kAsync : dist::PsMode::kSync;
}

// One worker's training: its shard's batches in, progress and the chief's
// checkpoints out.
class PsTrainer {
 public:
  PsTrainer(const TrainSettings& settings, const models::DensityCounter& model, dist::PsWorker& worker,
            const Saver& saver, const dist::PsTask& task, PreparedRun& run, bool resume)
      : settings_(settings), model_(model), worker_(worker), saver_(saver), task_(task), run_(run),
        resume_(resume) {}

  void Train() {
    worker_.Train([this](int64_t step) { return Batch(step); }, {model_.loss, model_.counts},
                  [this](const dist::PsStepResult& step) { OnStep(step); }, [this] { OnFinished(); });
  }

 private:
  // The pipeline starts where the run stands, which only the first step
  // knows on a resumed run (the chief restores inside PsWorker::Train).
  // Sync: `step` is the global step, one batch of every shard per step.
  // Async: `step` counts this worker's own steps; a resumed async run starts
  // its shard at global step / workers, about where it was.
  FeedList Batch(int64_t step) {
    auto wait_start = Clock::now();
    if (!progress_) Start(step);
    batch_ = *pipeline_->Next();
    waiting_ += std::chrono::duration<double>(Clock::now() - wait_start).count();
    return {{model_.images, batch_.images}, {model_.target, batch_.density}};
  }

  void Start(int64_t step) {
    const bool async = PsModeOf(settings_) == dist::PsMode::kAsync;
    int64_t start = step;
    if (async) start = resume_ ? worker_.session().Run({model_.global_step})[0].scalar<int64_t>() : 0;
    if (resume_)
      std::cout << "resuming " << (task_.is_chief() ? *run_.latest : "the chief's checkpoint") << " at step "
                << start << "\n";
    const int shard = task_.task.index, shards = task_.num_workers();
    int64_t shard_start = async ? start / shards : start;
    if (run_.pipeline && shard_start == 0) pipeline_ = std::move(run_.pipeline);
    else
      pipeline_ = std::make_unique<models::InputPipeline>(run_.index,
                                                          PipelineOptionsFor(settings_, shard_start, shard, shards));
    PrintPlan(settings_);
    progress_.emplace(start, settings_.total_steps, 10);
  }

  void OnStep(const dist::PsStepResult& step) {
    step_ = step.global_step;
    progress_->Update(step_, static_cast<int64_t>(batch_.counts.size()),
                      {{"loss", step.fetched[0].scalar<float>()},
                       {"mae", BatchMae(step.fetched[1], batch_.counts)}});
    if (step_ % settings_.checkpoint_every == 0 && step_ < settings_.total_steps) Checkpoint();
    if (!timing_started_) {  // the first step builds the executors: time the steady state
      loop_start_ = Clock::now();
      waiting_ = 0;
      timing_started_ = true;
    }
  }

  // The ps tasks still serve here: the chief saves the final variables.
  void OnFinished() {
    if (progress_) progress_->Finish();
    std::optional<std::string> path;
    if (task_.is_chief()) {  // async: the others' updates may have moved the step on
      step_ = worker_.session().Run({model_.global_step})[0].scalar<int64_t>();
      path = Checkpoint();
    }
    double seconds = std::chrono::duration<double>(Clock::now() - loop_start_).count();
    if (progress_) PrintSummary(false, step_, *progress_, seconds > 0 ? waiting_ / seconds : 0, path);
  }

  std::string Checkpoint() {
    if (!task_.is_chief()) return "";
    int64_t step = worker_.session().Run({model_.global_step})[0].scalar<int64_t>();
    return saver_.Save(worker_.session(), (fs::path(CheckpointDir(settings_)) / "model").string(), step);
  }

  const TrainSettings& settings_;
  const models::DensityCounter& model_;
  dist::PsWorker& worker_;
  const Saver& saver_;
  const dist::PsTask& task_;
  PreparedRun& run_;
  const bool resume_;
  std::unique_ptr<models::InputPipeline> pipeline_;
  models::Batch batch_;
  std::optional<Progress> progress_;
  int64_t step_ = 0;
  Clock::time_point loop_start_ = Clock::now();
  double waiting_ = 0;
  bool timing_started_ = false;
};

void TrainWorker(TrainSettings settings, bool resume, const dist::PsTask& task) {
  apps::TrainingCluster(settings.parallel);  // checks --workers against the cluster
  DFLOW_REQUIRE(settings.parallel.ps == 0 || settings.parallel.ps == task.num_ps(), "train: --ps ", settings.parallel.ps,
                " but DFLOW_CLUSTER lists ", task.num_ps(), " ps tasks");
  PreparedRun run = PrepareRun(settings, resume, task.task.index, task.num_workers());
  Scope scope = Scope::NewRootScope();
  scope.graph().set_seed(static_cast<int64_t>(settings.seed));
  models::DensityCounterOptions model_options = ModelOptions(settings);
  model_options.external_optimizer = true;
  models::DensityCounter model = models::BuildDensityCounter(scope, model_options);
  autodiff::AdamOptimizer adam(model.learning_rate);
  dist::PsWorker worker(scope, adam.ComputeGradients(scope, model.loss, model.variables), adam, task,
                        {.mode = PsModeOf(settings), .num_steps = settings.total_steps,
                         .num_threads = settings.threads, .bind = ""});
  Saver saver(scope, worker.variables(), SaverOptions{.max_to_keep = settings.keep});
  if (resume) worker.RestoreWith([&](Session& session) { saver.Restore(session, *run.latest); });
  PsTrainer(settings, model, worker, saver, task, run, resume).Train();
}

}  // namespace

// Ctrl-C: `dflow launch` passes the signal to every task and the ps tasks
// stop serving at once, so no final checkpoint can be read from them: the
// run resumes from the chief's last periodic checkpoint.
int TrainWithParameterServers(TrainSettings settings, bool resume) {
  // --threads for the ps tasks too: with 1, every sum runs in one order.
  return dist::RunPsTask([&](const dist::PsTask& task) { TrainWorker(settings, resume, task); },
                         settings.threads);
}

}  // namespace dflow::count_app

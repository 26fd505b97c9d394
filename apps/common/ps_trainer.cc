// The apps' parameter-server training loop; see ps_trainer.h.
#include "apps/common/ps_trainer.h"

#include <chrono>
#include <filesystem>
#include <iostream>

#include "autodiff/optimizers.h"

namespace dflow::apps {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// One worker's training: its shard's batches in, progress and the chief's
// checkpoints out.
class PsTrainer {
 public:
  PsTrainer(dist::PsWorker& worker, const Saver& saver, const dist::PsTask& task, const PsGraph& graph,
            const PsLoopOptions& options, PsInput& input)
      : worker_(worker), saver_(saver), task_(task), graph_(graph), options_(options), input_(input) {}

  void Train() {
    worker_.Train([this](int64_t step) { return Batch(step); }, graph_.fetches,
                  [this](const dist::PsStepResult& step) { OnStep(step); }, [this] { OnFinished(); });
  }

 private:
  // The input starts where the run stands, which only the first step
  // knows on a resumed run (the chief restores inside PsWorker::Train).
  // Sync: `step` is the global step, one batch of every shard per step.
  // Async: `step` counts this worker's own steps; a resumed async run starts
  // its shard at global step / workers, about where it was.
  FeedList Batch(int64_t step) {
    auto wait_start = Clock::now();
    if (!progress_) Start(step);
    FeedList feeds = input_.Next();
    waiting_ += std::chrono::duration<double>(Clock::now() - wait_start).count();
    return feeds;
  }

  void Start(int64_t step) {
    const bool async = PsModeName(options_.parallel) == "async";
    const bool resume = options_.resume_from.has_value();
    int64_t start = step;
    if (async) start = resume ? GlobalStep() : 0;
    if (resume)
      std::cout << "resuming " << (task_.is_chief() ? *options_.resume_from : "the chief's checkpoint")
                << " at step " << start << "\n";
    input_.Open(async ? start / task_.num_workers() : start, task_.task.index, task_.num_workers());
    progress_.emplace(start, options_.total_steps, options_.progress_every);
    if (task_.is_chief()) progress_->RecordTo(MetricsFile(fs::path(options_.checkpoint_dir).parent_path().string()));
  }

  void OnStep(const dist::PsStepResult& step) {
    step_ = step.global_step;
    progress_->Update(step_, input_.images(), input_.Metrics(step.fetched));
    if (step_ % options_.checkpoint_every == 0 && step_ < options_.total_steps) Checkpoint();
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
      step_ = GlobalStep();
      path = Checkpoint();
    }
    double seconds = std::chrono::duration<double>(Clock::now() - loop_start_).count();
    if (progress_) PrintSummary(false, step_, *progress_, seconds > 0 ? waiting_ / seconds : 0, path);
  }

  int64_t GlobalStep() { return worker_.session().Run({graph_.global_step})[0].scalar<int64_t>(); }

  std::string Checkpoint() {
    if (!task_.is_chief()) return "";
    return saver_.Save(worker_.session(), (fs::path(options_.checkpoint_dir) / "model").string(), GlobalStep());
  }

  dist::PsWorker& worker_;
  const Saver& saver_;
  const dist::PsTask& task_;
  const PsGraph& graph_;
  const PsLoopOptions& options_;
  PsInput& input_;
  std::optional<Progress> progress_;
  int64_t step_ = 0;
  Clock::time_point loop_start_ = Clock::now();
  double waiting_ = 0;
  bool timing_started_ = false;
};

}  // namespace

void TrainPsWorker(const dist::PsTask& task, const PsGraph& graph, const PsLoopOptions& options, PsInput& input) {
  autodiff::AdamOptimizer adam(graph.learning_rate);
  const dist::PsMode mode = PsModeName(options.parallel) == "async" ? dist::PsMode::kAsync : dist::PsMode::kSync;
  dist::PsWorker worker(graph.scope, adam.ComputeGradients(graph.scope, graph.loss, graph.variables), adam, task,
                        {.mode = mode, .num_steps = options.total_steps, .num_threads = options.threads,
                         .bind = ""});
  Saver saver(graph.scope, worker.variables(), SaverOptions{.max_to_keep = options.keep});
  if (options.resume_from)
    worker.RestoreWith([&](Session& session) { saver.Restore(session, *options.resume_from); });
  else if (options.initialise)
    worker.RestoreWith([&](Session& session) { options.initialise(session, saver); });
  PsTrainer(worker, saver, task, graph, options, input).Train();
}

}  // namespace dflow::apps

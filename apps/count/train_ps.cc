// dflow-count train --strategy ps: parameter-server training of the density
// counter. The ps tasks hold the variables and apply the updates; each
// worker builds the same graph, reads its own shard and pushes gradients
// through a dist::PsWorker (apps/common/ps_trainer.h); the chief (worker 0)
// writes the checkpoints, reading the variables from the ps tasks. See
// docs/counting.md.
#include "apps/common/ps_trainer.h"
#include "apps/common/workers.h"
#include "apps/count/training.h"

namespace dflow::count_app {
namespace {

// This worker's shard of tiles, with their density maps.
class CountInput : public apps::PsInput {
 public:
  CountInput(const TrainSettings& settings, const models::DensityCounter& model, PreparedRun& run)
      : settings_(settings), model_(model), run_(run) {}

  void Open(int64_t shard_step, int shard, int shards) override {
    if (run_.pipeline && shard_step == 0) pipeline_ = std::move(run_.pipeline);
    else
      pipeline_ = std::make_unique<models::InputPipeline>(run_.index,
                                                          PipelineOptionsFor(settings_, shard_step, shard, shards));
    PrintPlan(settings_);
  }
  FeedList Next() override {
    batch_ = *pipeline_->Next();
    return {{model_.images, batch_.images}, {model_.target, batch_.density}};
  }
  int64_t images() const override { return static_cast<int64_t>(batch_.counts.size()); }
  apps::Progress::Metrics Metrics(const std::vector<Tensor>& fetched) const override {
    return {{"loss", fetched[0].scalar<float>()}, {"mae", BatchMae(fetched[1], batch_.counts)}};
  }

 private:
  const TrainSettings& settings_;
  const models::DensityCounter& model_;
  PreparedRun& run_;
  std::unique_ptr<models::InputPipeline> pipeline_;
  models::Batch batch_;
};

void TrainWorker(TrainSettings settings, bool resume, const dist::PsTask& task) {
  apps::CheckPsWorker(settings.parallel, settings.device, task);
  PreparedRun run = PrepareRun(settings, resume, task.task.index, task.num_workers());
  Scope scope = Scope::NewRootScope();
  scope.graph().set_seed(static_cast<int64_t>(settings.seed));
  models::DensityCounterOptions model_options = ModelOptions(settings);
  model_options.external_optimizer = true;
  models::DensityCounter model = models::BuildDensityCounter(scope, model_options);
  CountInput input(settings, model, run);
  apps::TrainPsWorker(task,
                      {.scope = scope, .loss = model.loss, .learning_rate = model.learning_rate,
                       .global_step = model.global_step, .variables = model.variables,
                       .fetches = {model.loss, model.counts}},
                      apps::PsLoopOptionsFor(settings, resume ? run.latest : std::nullopt, 10), input);
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

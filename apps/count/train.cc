// dflow-count train: trains the density counter on a point-annotated
// dataset, with periodic atomic checkpoints, exact resume and RUN/config.json.
#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>

#include "apps/count/commands.h"
#include "apps/count/training.h"
#include "apps/common/training_loop.h"
#include "apps/common/workers.h"
#include "dist/training/data_parallel.h"
#include "graph/session.h"
#include "models/checkpoint.h"

namespace dflow::count_app {
namespace {

namespace fs = std::filesystem;

struct TrainLoop {
  const TrainSettings& settings;
  const models::DensityCounter& model;
  Session& session;
  const Saver& saver;
  dist::DataParallelStrategy* strategy = nullptr;  // null: single-process
  // This worker's input from a step on, for its rank in the current ring
  // (an elastic job reshards at every change of membership).
  std::function<std::unique_ptr<models::InputPipeline>(int64_t start)> input;

  bool chief() const { return !strategy || strategy->is_chief(); }
  // Only the chief writes checkpoints; the others return "".
  std::string Checkpoint(int64_t step) const {
    if (!chief()) return "";
    return saver.Save(session, (fs::path(CheckpointDir(settings)) / "model").string(), step);
  }
  // Loss, counts and learning rate of one step; with workers, the gradients
  // are averaged first.
  std::vector<Tensor> Step(const models::Batch& batch) const {
    FeedList feeds = {{model.images, batch.images}, {model.target, batch.density}};
    if (!strategy) return session.Run(feeds, {model.loss, model.counts, model.learning_rate}, {model.train});
    dist::ReplicatedStep names{.gradients = {model.gradients.begin(), model.gradients.end()},
                               .gradient_feeds = {model.gradient_feeds.begin(), model.gradient_feeds.end()},
                               .apply = {model.train},
                               .extra_fetches = {model.loss, model.counts, model.learning_rate},
                               .local_targets = {}};
    return dist::RunDataParallelStep(session, *strategy, apps::InBackpropOrder(std::move(names)), feeds);
  }

  // Runs steps start+1 .. total; returns the last step done.
  int64_t Run(int64_t start) {
    Progress progress(start, settings.total_steps, 10);
    if (chief()) progress.RecordTo(apps::MetricsFile(settings.out));
    apps::TrainingLoop<models::InputPipeline> loop{
        .total_steps = settings.total_steps,
        .checkpoint_every = settings.checkpoint_every,
        .strategy = strategy,
        .stop_requested = [&] { return apps::StopRequested(strategy); },
        .input = input,
        .run_step =
            [&](int64_t step, const models::Batch& batch) {
              std::vector<Tensor> out = Step(batch);
              progress.Update(step, static_cast<int64_t>(batch.counts.size()),
                              {{"loss", out[0].scalar<float>()}, {"mae", BatchMae(out[1], batch.counts)}},
                              {{"lr", out[2].scalar<float>()}});
            },
        .checkpoint = [&](int64_t step) { Checkpoint(step); },
        .regroup = [&](int64_t step, const std::string& why) {
          return apps::Regroup(*strategy, session, saver, model.global_step, step, why);
        }};
    const apps::TrainingLoopResult r = loop.Run(start);
    progress.Finish();
    std::string path = Checkpoint(r.step);
    PrintSummary(r.stopped, r.step, progress, r.input_wait_fraction,
                 chief() ? std::optional<std::string>(path) : std::nullopt);
    return r.step;
  }
};

}  // namespace

int Train(TrainSettings settings, bool resume) {
  CheckSessionDevice(settings.device);  // before the run directory is written
  if (apps::UsesParameterServers(settings.parallel, settings.device))
    return TrainWithParameterServers(std::move(settings), resume);
  // With workers, only the chief (worker 0) writes the run directory.
  const apps::TrainingWorkers workers = apps::FindTrainingWorkers(settings.parallel, settings.device);
  PreparedRun run = PrepareRun(settings, resume, workers.index, workers.count);
  const std::optional<std::string>& latest = run.latest;

  Scope scope = Scope::NewRootScope();
  scope.graph().set_seed(static_cast<int64_t>(settings.seed));
  models::DensityCounterOptions model_options = ModelOptions(settings);
  model_options.fed_gradients = workers.distributed();
  models::DensityCounter model = models::BuildDensityCounter(scope, model_options);
  Saver saver(scope, SaverOptions{.max_to_keep = settings.keep});
  SessionOptions session_options;
  session_options.num_threads = settings.threads;
  if (!settings.device.empty()) session_options.devices = {settings.device};
  Session session(scope, session_options);
  std::unique_ptr<dist::DataParallelStrategy> strategy;
  if (workers.cluster) strategy = apps::MakeStrategy(settings.parallel, *workers.cluster, model.variables);
  if (workers.elastic) strategy = apps::MakeElasticStrategy(settings.parallel, *workers.elastic, model.variables);
  const bool chief = !strategy || strategy->is_chief();
  int64_t start = 0;
  if (resume && chief) {
    saver.Restore(session, *latest);
  } else {
    session.Run({}, {}, {model.init});
  }
  // Every worker starts from the chief's variables (optimizer slots and global step included).
  if (strategy) apps::SynchronizeVariables(session, saver, *strategy);
  if (resume || workers.elastic) start = session.Run({model.global_step})[0].scalar<int64_t>();
  if (resume) std::cout << "resuming " << (chief ? *latest : "the chief's checkpoint") << " at step " << start << "\n";
  PrintPlan(settings);
  apps::StopOnSignals();
  TrainLoop loop{settings, model, session, saver, strategy.get(), {}};
  // The pipeline PrepareRun made starts at step 0 for the prepared rank.
  loop.input = [&](int64_t from) -> std::unique_ptr<models::InputPipeline> {
    const int rank = strategy ? strategy->worker() : 0, ranks = strategy ? strategy->num_workers() : 1;
    std::unique_ptr<models::InputPipeline> prepared = std::move(run.pipeline);
    if (prepared && from == 0 && rank == workers.index && ranks == workers.count) return prepared;
    return std::make_unique<models::InputPipeline>(run.index, PipelineOptionsFor(settings, from, rank, ranks));
  };
  loop.Run(start);
  return apps::StopSignalled() ? 130 : 0;
}

}  // namespace dflow::count_app

// dflow-count train: trains the density counter on a point-annotated
// dataset, with periodic atomic checkpoints, exact resume and RUN/config.json.
#include <iostream>
#include <memory>

#include "apps/count/commands.h"
#include "apps/count/training.h"
#include "apps/common/training_loop.h"
#include "apps/common/workers.h"
#include "dist/training/data_parallel.h"
#include "graph/session.h"
#include "models/checkpoint.h"

namespace dflow::count_app {
namespace {

// Loss, counts and learning rate of one step; with workers, the gradients
// are averaged first.
std::vector<Tensor> RunStep(Session& session, const models::DensityCounter& model,
                            dist::DataParallelStrategy* strategy, const models::Batch& batch) {
  FeedList feeds = {{model.images, batch.images}, {model.target, batch.density}};
  if (!strategy) return session.Run(feeds, {model.loss, model.counts, model.learning_rate}, {model.train});
  dist::ReplicatedStep names{.gradients = {model.gradients.begin(), model.gradients.end()},
                             .gradient_feeds = {model.gradient_feeds.begin(), model.gradient_feeds.end()},
                             .apply = {model.train},
                             .extra_fetches = {model.loss, model.counts, model.learning_rate},
                             .local_targets = {}};
  return dist::RunDataParallelStep(session, *strategy, apps::InBackpropOrder(std::move(names)), feeds);
}

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
  apps::AppTrainingRun<models::InputPipeline> training{
      .total_steps = settings.total_steps,
      .checkpoint_every = settings.checkpoint_every,
      .report_every = 10,
      .out = settings.out,
      .checkpoint_dir = CheckpointDir(settings),
      .session = &session,
      .saver = &saver,
      .global_step = model.global_step,
      .strategy = strategy.get(),
      // The pipeline PrepareRun made starts at step 0 for the prepared rank.
      .input = [&](int64_t from) -> std::unique_ptr<models::InputPipeline> {
        const int rank = strategy ? strategy->worker() : 0, ranks = strategy ? strategy->num_workers() : 1;
        std::unique_ptr<models::InputPipeline> prepared = std::move(run.pipeline);
        if (prepared && from == 0 && rank == workers.index && ranks == workers.count) return prepared;
        return std::make_unique<models::InputPipeline>(run.index, PipelineOptionsFor(settings, from, rank, ranks));
      },
      .run_step = [&](int64_t step, const models::Batch& batch, apps::Progress& progress) {
        std::vector<Tensor> out = RunStep(session, model, strategy.get(), batch);
        progress.Update(step, static_cast<int64_t>(batch.counts.size()),
                        {{"loss", out[0].scalar<float>()}, {"mae", BatchMae(out[1], batch.counts)}},
                        {{"lr", out[2].scalar<float>()}});
      }};
  training.Run(start);
  return apps::StopSignalled() ? 130 : 0;
}

}  // namespace dflow::count_app

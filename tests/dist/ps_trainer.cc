// The spiral MLP trained with parameter servers, as one process of the
// cluster in DFLOW_CLUSTER: a ps task serves, a worker trains on its shard
// (tests/dist/training/test_ps_training.cc starts these). Each worker writes
// OUT/worker-K.txt (mean loss of the first and last 10 steps, steps, staleness); the chief also
// writes the final variables as OUT/var-I.npy.
//
//   ps_trainer --mode sync|async --steps N --out DIR [--step-timeout-ms MS]
//              [--finish-timeout-ms MS] [--sleep-ms MS]
//              [--checkpoint DIR] [--restore-from DIR]   (the chief's, at the end / at start)
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "autodiff/gradients.h"
#include "autodiff/learning_rate.h"
#include "dist/training/ps_training.h"
#include "graph/npy.h"
#include "models/checkpoint.h"
#include "tests/dist/replicated_mlp.h"

namespace dflow {
namespace {

struct Args {
  dist::PsMode mode = dist::PsMode::kSync;
  int64_t steps = 10;
  std::string out = ".";
  int64_t step_timeout_ms = 10000;
  int64_t finish_timeout_ms = 30000;
  int64_t sleep_ms = 0;  // per step, so a test can kill a worker mid-training
  std::string checkpoint_dir, restore_dir;
};

Args ParseArgs(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--mode" && (value == "sync" || value == "async"))
      args.mode = value == "sync" ? dist::PsMode::kSync : dist::PsMode::kAsync;
    else if (flag == "--steps") args.steps = std::stoll(value);
    else if (flag == "--out") args.out = value;
    else if (flag == "--step-timeout-ms") args.step_timeout_ms = std::stoll(value);
    else if (flag == "--finish-timeout-ms") args.finish_timeout_ms = std::stoll(value);
    else if (flag == "--sleep-ms") args.sleep_ms = std::stoll(value);
    else if (flag == "--checkpoint") args.checkpoint_dir = value;
    else if (flag == "--restore-from") args.restore_dir = value;
    else Fail(Code::kInvalidArgument, "ps_trainer: bad argument '", flag, " ", value, "'");
  }
  return args;
}

// Losses of single batches of 16 are noisy: the summary compares the means
// of the first and the last 10 steps.
struct Summary {
  std::vector<double> losses;
  int64_t max_staleness = 0, total_staleness = 0;
  double MeanLoss(size_t begin, size_t end) const {
    double sum = 0;
    for (size_t i = begin; i < end; ++i) sum += losses[i];
    return end > begin ? sum / static_cast<double>(end - begin) : -1;
  }
  double first_loss() const { return MeanLoss(0, std::min<size_t>(10, losses.size())); }
  double last_loss() const { return MeanLoss(losses.size() - std::min<size_t>(10, losses.size()), losses.size()); }
};

void Train(const dist::PsTask& task, const Args& args) {
  Scope scope = Scope::NewRootScope();
  testing::SpiralMlp model = testing::BuildSpiralMlp(scope, /*seed=*/7);
  std::vector<Output> vars = autodiff::TrainableVariables(scope.graph());
  std::vector<Output> grads = autodiff::AddGradients(scope, {model.loss}, vars);
  std::vector<autodiff::GradAndVar> grads_and_vars;
  for (size_t i = 0; i < vars.size(); ++i) grads_and_vars.push_back({grads[i], vars[i]});
  autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(scope, 0.01));
  dist::PsWorker worker(scope, grads_and_vars, adam, task,
                        {.mode = args.mode,
                         .num_steps = args.steps,
                         .step_timeout = std::chrono::milliseconds(args.step_timeout_ms),
                         .finish_timeout = std::chrono::milliseconds(args.finish_timeout_ms),
                         .bind = ""});
  Saver saver(scope, worker.variables());
  if (!args.restore_dir.empty())
    worker.RestoreWith([&](Session& session) {
      std::optional<std::string> latest = LatestCheckpoint(args.restore_dir);
      if (!latest) Fail(Code::kNotFound, "ps_trainer: no checkpoint in ", args.restore_dir);
      saver.Restore(session, *latest);
    });
  auto data = models::MakeSpirals({.points_per_class = 200, .seed = 5});
  const int k = task.task.index, n = task.num_workers();
  Summary summary;
  auto batches = [&](int64_t step) {
    if (args.sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(args.sleep_ms));
    auto batch = testing::WorkerBatch(data, k, n, static_cast<int>(step), 16);
    return FeedList{{model.x, batch.points}, {model.labels, batch.labels}};
  };
  auto on_step = [&](const dist::PsStepResult& step) {
    double loss = step.fetched[0].scalar<float>();
    summary.losses.push_back(loss);
    summary.max_staleness = std::max(summary.max_staleness, step.staleness);
    summary.total_staleness += step.staleness;
    std::cout << "worker " << k << " own_step " << summary.losses.size() << " global_step "
              << step.global_step << " staleness " << step.staleness << " loss " << loss << std::endl;
  };
  auto on_finished = [&] {
    if (!task.is_chief()) return;
    std::vector<Tensor> values = worker.session().Run(std::vector<TensorName>(vars.begin(), vars.end()));
    for (size_t i = 0; i < values.size(); ++i) WriteNpy(StrCat(args.out, "/var-", i, ".npy"), values[i]);
    if (!args.checkpoint_dir.empty()) saver.Save(worker.session(), args.checkpoint_dir + "/model");
  };
  worker.Train(batches, {model.loss}, on_step, on_finished);
  std::ofstream(StrCat(args.out, "/worker-", k, ".txt"))
      << "first_loss " << summary.first_loss() << "\nlast_loss " << summary.last_loss() << "\nsteps "
      << summary.losses.size() << "\nmax_staleness " << summary.max_staleness << "\ntotal_staleness "
      << summary.total_staleness << "\n";
}

}  // namespace
}  // namespace dflow

int main(int argc, char** argv) {
  dflow::Args args;
  try {
    args = dflow::ParseArgs(argc, argv);
  } catch (const dflow::Error& e) {
    std::cerr << e.what() << std::endl;
    return 2;
  }
  return dflow::dist::RunPsTask([&](const dflow::dist::PsTask& task) { dflow::Train(task, args); }, 1);
}

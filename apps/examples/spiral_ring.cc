// spiral_ring: data-parallel training, Horovod's way. Start N workers with
//
//   dflow launch -n 2 -- spiral_ring --steps 600            # ring all-reduce
//   dflow launch -n 2 --ps 1 -- spiral_ring --steps 600     # parameter servers
//
// Each trains the spiral MLP on its own shard of the data; a
// DistributedOptimizer averages the gradients over the workers (in the
// graph on the ring; on the ps tasks, which hold the variables, with
// parameter servers) and a TrainingSession starts every worker from the
// chief's variables. Both strategies train to the same bits. Run alone, it
// is a job of one worker. The chief reports held-out accuracy and saves a
// checkpoint. spiral_ring.py is the same program in Python, and trains to
// the same bits. Installed with dflow (share/doc/dflow/examples), it builds
// out of the tree with
//
//   g++ -std=c++20 -O2 spiral_ring.cc -o spiral_ring $(pkg-config --cflags --libs dflow)
#include <iostream>

#include <CLI/CLI.hpp>

#include "autodiff/learning_rate.h"
#include "dflow_config.h"
#include "dist/training/training_session.h"
#include "models/checkpoint.h"
#include "models/data/spirals.h"
#include "models/layers.h"
#include "models/mlp.h"
#include "ops/ops.h"

namespace {

using namespace dflow;

struct Settings {
  int64_t steps = 600, batch = 32;
  std::string out = "spiral_ring_run";
};

// Worker `k` of `n` trains on its shard, rows k, k + n, k + 2n, ..., visited
// in a scattered order (the data comes sorted by class): the j-th row drawn
// is shard row j * 7919 mod the shard's size, a permutation because the
// prime 7919 shares no factor with any shard size below it.
models::LabelledPoints ShardBatch(const models::LabelledPoints& data, int k, int n, int64_t step, int64_t batch) {
  const int64_t shard_rows = (data.labels.NumElements() - k + n - 1) / n;
  std::vector<int64_t> rows;
  for (int64_t j = step * batch; j < (step + 1) * batch; ++j) rows.push_back(k + (j * 7919 % shard_rows) * n);
  return models::Gather(data, rows);
}

int Run(const Settings& settings) {
  Scope scope = Scope::NewRootScope();
  scope.graph().set_seed(1);
  Output x = ops::Placeholder(scope.WithOpName("x"), DType::kFloat32, {-1, 2});
  Output labels = ops::Placeholder(scope.WithOpName("labels"), DType::kInt32, {-1});
  Output h = x;
  for (const char* layer : {"hidden1", "hidden2"})
    h = models::Dense(scope.NewSubScope(layer), h, 128, {.activation = models::Activation::kRelu}).output;
  Output logits = models::Dense(scope.NewSubScope("logits"), h, 3).output;
  Output loss = ops::Mean(scope.WithOpName("loss"), ops::SparseSoftmaxCrossEntropyWithLogits(scope, logits, labels).loss, 0);

  autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(scope, 0.01));
  dist::DistributedOptimizer optimizer(adam);  // the job `dflow launch` started, or one worker
  optimizer.Minimize(scope, loss);

  // One thread: every sum in one order, so both strategies give the same bits.
  dist::TrainingSession session(scope, optimizer, {.num_steps = settings.steps, .session = {.num_threads = 1}});
  auto data = models::MakeSpirals({.points_per_class = 1000, .seed = 1});
  while (!session.ShouldStop()) {
    auto batch = ShardBatch(data, session.worker(), session.num_workers(), session.next_step(), settings.batch);
    auto out = session.Run({{x, batch.points}, {labels, batch.labels}}, {loss});
    if (session.is_chief() && session.global_step() % 100 == 0)
      std::cout << "step " << session.global_step() << "  loss " << out[0].scalar<float>() << std::endl;
  }
  session.Close();
  if (!session.is_chief()) return 0;

  auto test = models::MakeSpirals({.points_per_class = 500, .seed = 1001});
  Tensor test_logits = session.session().Run({{x, test.points}}, {logits})[0];
  std::cout << "held-out accuracy " << models::Accuracy(test_logits, test.labels) << " with "
            << session.num_workers() << " worker(s)" << std::endl;
  Saver saver(scope, session.variables());
  std::cout << "saved " << saver.Save(session.session(), settings.out + "/", settings.steps) << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  CLI::App app("Train the spiral MLP data-parallel: start N workers with `dflow launch -n N [--ps P] -- spiral_ring`.");
  app.set_version_flag("--version", std::string("spiral_ring ") + DFLOW_VERSION);
  app.add_option("--steps", settings.steps, "Training steps")->check(CLI::PositiveNumber);
  app.add_option("--batch", settings.batch, "Batch size per worker")->check(CLI::PositiveNumber);
  app.add_option("--out", settings.out, "Directory for the chief's checkpoint");
  CLI11_PARSE(app, argc, argv);
  try {
    if (auto ps = dflow::dist::ParameterServerTask()) return dflow::dist::ServeParameterServer(*ps);
    return Run(settings);
  } catch (const dflow::Error& e) {
    std::cerr << "spiral_ring: " << e.what() << std::endl;
    return 1;
  }
}

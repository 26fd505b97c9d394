// TrainingSession: on the ring, workers (threads joined in memory) started
// from different seeds train to a synchronous parameter server's bits; the
// chief's restore reaches every worker and the steps go on from its global
// step, bit for bit as if never stopped; misuse is named. The launcher's
// parameter-server job is read as such (the processes themselves are run by
// the Python test of apps/examples/spiral_ring.{cc,py}).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <thread>

#include "autodiff/learning_rate.h"
#include "dist/collectives/in_process_link.h"
#include "dist/training/ring_training.h"
#include "dist/training/training_session.h"
#include "models/checkpoint.h"
#include "ops/ops.h"
#include "tests/dist/replicated_mlp.h"

namespace dflow {
namespace {

const int64_t kSessionBatch = 16;

struct Job {
  std::vector<Tensor> variables;  // the model's, slots, global step (the chief's)
  std::vector<int64_t> first_steps;  // per worker: the global step of its first Run
};

// One worker of `num_workers` (threads over `network`): the spiral MLP of
// replicated_mlp.h with Adam (0.01), trained to `num_steps` global steps,
// the chief restoring `restore` first if given.
std::vector<Tensor> TrainWorker(int worker, int num_workers, dist::InProcessNetwork& network, int64_t num_steps,
                                const std::vector<Tensor>& restore, int64_t& first_step) {
  Scope scope = Scope::NewRootScope();
  testing::SpiralMlp m = testing::BuildSpiralMlp(scope, 7 + worker);  // only the broadcast makes them equal
  autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(scope, 0.01));
  dist::DistributedOptimizer optimizer(adam, worker, num_workers, [&](std::vector<dist::GradientSpec> specs) {
    return std::make_unique<dist::RingAllReduceStrategy>(network.endpoint(worker), std::move(specs));
  });
  optimizer.Minimize(scope, m.loss);
  dist::TrainingSessionOptions options{.num_steps = num_steps, .session = {.num_threads = 1}};
  if (!restore.empty())
    options.restore = [&](Session& session, const std::vector<Output>& vars) {
      Saver(scope, vars).Assign(session, restore);
    };
  dist::TrainingSession session(scope, optimizer, options);
  auto data = models::MakeSpirals({.points_per_class = 200, .seed = 5});
  first_step = session.next_step();
  while (!session.ShouldStop()) {
    models::LabelledPoints mine =
        testing::WorkerBatch(data, worker, num_workers, static_cast<int>(session.next_step()), kSessionBatch);
    session.Run({{m.x, mine.points}, {m.labels, mine.labels}}, {m.loss});
  }
  session.Close();
  CHECK_THROWS_WITH(session.Run({}), Catch::Contains("Run after Close"));
  return Saver(scope, session.variables()).Values(session.session());
}

Job TrainJob(int num_workers, int64_t num_steps, const std::vector<Tensor>& restore = {}) {
  dist::InProcessNetwork network(num_workers);
  std::vector<std::vector<Tensor>> finals(num_workers);
  std::vector<std::string> errors(num_workers);
  Job job;
  job.first_steps.resize(num_workers);
  std::vector<std::thread> threads;
  for (int r = 0; r < num_workers; ++r)
    threads.emplace_back([&, r] {
      try {
        finals[r] = TrainWorker(r, num_workers, network, num_steps, restore, job.first_steps[r]);
      } catch (const Error& e) {
        errors[r] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::string& error : errors) REQUIRE(error.empty());
  for (int r = 1; r < num_workers; ++r) {
    REQUIRE(finals[r].size() == finals[0].size());
    for (size_t v = 0; v < finals[0].size(); ++v) CHECK(finals[r][v].Equals(finals[0][v]));
  }
  job.variables = finals[0];
  return job;
}

TEST_CASE("TrainingSession on the ring trains 3 workers to a sync parameter server's bits", "[training]") {
  Job job = TrainJob(3, 15);
  // Model variables first (the order TrainSyncInOneProcess returns them in).
  auto data = models::MakeSpirals({.points_per_class = 200, .seed = 5});
  std::vector<Tensor> ps = testing::TrainSyncInOneProcess(data, 3, 15, kSessionBatch);
  REQUIRE(job.variables.size() > ps.size());
  for (size_t v = 0; v < ps.size(); ++v) {
    INFO("variable " << v);
    CHECK(job.variables[v].Equals(ps[v]));
  }
  CHECK(job.first_steps == std::vector<int64_t>{0, 0, 0});
}

TEST_CASE("TrainingSession: the chief's restore reaches every worker; steps go on from its global step",
          "[training]") {
  Job straight = TrainJob(2, 12);
  Job first_half = TrainJob(2, 5);
  Job resumed = TrainJob(2, 12, first_half.variables);
  CHECK(resumed.first_steps == std::vector<int64_t>{5, 5});
  REQUIRE(resumed.variables.size() == straight.variables.size());
  for (size_t v = 0; v < straight.variables.size(); ++v) {
    INFO("variable " << v);
    CHECK(resumed.variables[v].Equals(straight.variables[v]));
  }
  // Restored at or past num_steps: nothing left to do.
  Job done = TrainJob(2, 5, first_half.variables);
  CHECK(done.first_steps == std::vector<int64_t>{5, 5});
}

dist::DistributedOptimizer AloneOptimizer(autodiff::Optimizer& optimizer) {
  return dist::DistributedOptimizer(optimizer, 0, 1, [](std::vector<dist::GradientSpec>) {
    return dist::MakeSingleWorkerStrategy();
  });
}

TEST_CASE("TrainingSession: misuse is named", "[training]") {
  Scope s = Scope::NewRootScope();
  testing::SpiralMlp m = testing::BuildSpiralMlp(s, 7);
  autodiff::GradientDescentOptimizer sgd(autodiff::ConstantLearningRate(s, 0.1));
  dist::DistributedOptimizer optimizer = AloneOptimizer(sgd);
  CHECK_THROWS_WITH(dist::TrainingSession(s, optimizer, {}), Catch::Contains("call the DistributedOptimizer's Minimize"));
  optimizer.Minimize(s, m.loss);
  CHECK_THROWS_WITH(optimizer.Minimize(s, m.loss), Catch::Contains("already called"));
  CHECK_THROWS_WITH(dist::TrainingSession(s, optimizer, {.num_steps = -1}), Catch::Contains("num_steps must be >= 0"));

  dist::TrainingSession session(s, optimizer, {.num_steps = 2});
  auto data = models::MakeSpirals({.points_per_class = 20, .seed = 5});
  FeedList feeds = {{m.x, data.points}, {m.labels, data.labels}};
  CHECK(session.global_step() == 0);
  std::vector<Tensor> loss = session.Run(feeds, {m.loss});
  REQUIRE(loss.size() == 1);
  CHECK(loss[0].NumElements() == 1);
  session.Run(feeds);
  CHECK(session.ShouldStop());
  CHECK_THROWS_WITH(session.Run(feeds), Catch::Contains("steps are done (global step 2)"));
  session.Close();
  session.Close();  // once is enough; again does nothing
}

TEST_CASE("DistributedOptimizer reads the launcher's parameter-server job", "[training]") {
  const char* cluster = R"({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:3"], "ps": ["127.0.0.1:2"]}, )";
  unsetenv("DFLOW_STRATEGY");
  Scope s = Scope::NewRootScope();
  testing::SpiralMlp m = testing::BuildSpiralMlp(s, 7);
  autodiff::GradientDescentOptimizer sgd(autodiff::ConstantLearningRate(s, 0.1));

  setenv("DFLOW_CLUSTER", (std::string(cluster) + R"("task": {"type": "ps", "index": 0}})").c_str(), 1);
  std::optional<dist::PsTask> ps = dist::ParameterServerTask();
  REQUIRE(ps);
  CHECK(ps->task.index == 0);
  CHECK_THROWS_WITH(dist::DistributedOptimizer(sgd), Catch::Contains("a parameter server, which serves"));

  setenv("DFLOW_CLUSTER", (std::string(cluster) + R"("task": {"type": "worker", "index": 1}})").c_str(), 1);
  CHECK_FALSE(dist::ParameterServerTask());
  dist::DistributedOptimizer optimizer(sgd);
  unsetenv("DFLOW_CLUSTER");
  CHECK(optimizer.uses_parameter_servers());
  CHECK(optimizer.worker() == 1);
  CHECK(optimizer.num_workers() == 2);
  CHECK_FALSE(optimizer.is_chief());
  CHECK(optimizer.group() == nullptr);
  CHECK_THROWS_WITH(optimizer.AnyWorker(true), Catch::Contains("needs the ring's collectives"));
  Node* train = optimizer.Minimize(s, m.loss);
  CHECK(train == optimizer.train_op());
  // The variables live on the ps task; the updates run there.
  for (const Output& var : autodiff::TrainableVariables(s.graph()))
    CHECK(var.node()->requested_device() == "/job:ps/task:0");
  CHECK(optimizer.BroadcastVariables(s)->op() == "NoOp");
  optimizer.Finish();  // nothing to wait for without a TrainingSession
}

}  // namespace
}  // namespace dflow

// DistributedOptimizer: the spiral MLP trained by 3 workers (threads joined
// in memory) with the all-reduce in the graph gives the bits of a
// synchronous parameter server, as the two-run ring does; one worker gives
// the plain optimizer's bits; misuse fails with an error that says what to do.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <thread>

#include "autodiff/learning_rate.h"
#include "dist/collectives/in_process_link.h"
#include "dist/training/distributed_optimizer.h"
#include "dist/training/ring_training.h"
#include "ops/ops.h"
#include "tests/dist/replicated_mlp.h"

namespace dflow {
namespace {

const int kOptimizerWorkers = 3;
const int kOptimizerSteps = 15;
const int64_t kOptimizerBatch = 16;

struct Trainee {
  Scope scope = Scope::NewRootScope();
  testing::SpiralMlp model;
  Node* train = nullptr;
  Node* init = nullptr;
  Node* sync = nullptr;
};

// The spiral MLP of replicated_mlp.h with Adam (0.01) wrapped in `optimizer`.
template <class MakeOptimizer>
std::vector<Tensor> TrainWorker(int64_t seed, int worker, int num_workers, const models::LabelledPoints& data,
                                MakeOptimizer make_optimizer) {
  Trainee t;
  t.model = testing::BuildSpiralMlp(t.scope, seed);
  autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(t.scope, 0.01));
  dist::DistributedOptimizer optimizer = make_optimizer(adam);
  t.train = optimizer.Minimize(t.scope, t.model.loss);
  t.init = ops::GlobalVariablesInitializer(t.scope);
  t.sync = optimizer.BroadcastVariables(t.scope);
  Session session(t.scope, {.num_threads = 1});
  session.Run({}, {}, {t.init});
  session.Run({}, {}, {t.sync});
  for (int step = 0; step < kOptimizerSteps; ++step) {
    models::LabelledPoints mine = testing::WorkerBatch(data, worker, num_workers, step, kOptimizerBatch);
    session.Run({{t.model.x, mine.points}, {t.model.labels, mine.labels}}, {t.model.loss}, {t.train});
  }
  optimizer.Finish();
  std::vector<Output> vars = autodiff::TrainableVariables(t.scope.graph());
  return session.Run(std::vector<TensorName>(vars.begin(), vars.end()));
}

TEST_CASE("DistributedOptimizer trains 3 workers to a sync parameter server's bits", "[training]") {
  auto data = models::MakeSpirals({.points_per_class = 200, .seed = 5});
  dist::InProcessNetwork network(kOptimizerWorkers);
  std::vector<std::vector<Tensor>> finals(kOptimizerWorkers);
  std::vector<std::string> errors(kOptimizerWorkers);
  std::vector<std::thread> threads;
  for (int r = 0; r < kOptimizerWorkers; ++r)
    threads.emplace_back([&, r] {
      try {
        // Seeds differ per worker: only the broadcast makes them start equal.
        finals[r] = TrainWorker(7 + r, r, kOptimizerWorkers, data, [&](autodiff::Optimizer& adam) {
          return dist::DistributedOptimizer(adam, r, kOptimizerWorkers, [&, r](std::vector<dist::GradientSpec> specs) {
            dist::RingOptions options;
            options.buckets.bucket_bytes = 2048;  // several buckets
            return std::make_unique<dist::RingAllReduceStrategy>(network.endpoint(r), std::move(specs), options);
          });
        });
      } catch (const Error& e) {
        errors[r] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::string& error : errors) REQUIRE(error.empty());
  std::vector<Tensor> ps = testing::TrainSyncInOneProcess(data, kOptimizerWorkers, kOptimizerSteps, kOptimizerBatch);
  for (int r = 0; r < kOptimizerWorkers; ++r) {
    REQUIRE(finals[r].size() == ps.size());
    for (size_t v = 0; v < ps.size(); ++v) {
      INFO("worker " << r << ", variable " << v);
      CHECK(finals[r][v].Equals(ps[v]));
    }
  }
}

TEST_CASE("DistributedOptimizer without a cluster is the plain optimizer, bit for bit", "[training]") {
  unsetenv("DFLOW_CLUSTER");
  auto data = models::MakeSpirals({.points_per_class = 200, .seed = 5});
  std::vector<Tensor> wrapped =
      TrainWorker(7, 0, 1, data, [](autodiff::Optimizer& adam) { return dist::DistributedOptimizer(adam); });

  Scope s = Scope::NewRootScope();
  testing::SpiralMlp m = testing::BuildSpiralMlp(s, 7);
  autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(s, 0.01));
  Node* train = adam.Minimize(s, m.loss);
  Node* init = ops::GlobalVariablesInitializer(s);
  Session session(s, {.num_threads = 1});
  session.Run({}, {}, {init});
  for (int step = 0; step < kOptimizerSteps; ++step) {
    models::LabelledPoints batch = testing::WorkerBatch(data, 0, 1, step, kOptimizerBatch);
    session.Run({{m.x, batch.points}, {m.labels, batch.labels}}, {}, {train});
  }
  std::vector<Output> vars = autodiff::TrainableVariables(s.graph());
  std::vector<Tensor> plain = session.Run(std::vector<TensorName>(vars.begin(), vars.end()));
  REQUIRE(plain.size() == wrapped.size());
  for (size_t v = 0; v < plain.size(); ++v) CHECK(plain[v].Equals(wrapped[v]));
}

TEST_CASE("DistributedOptimizer: a step without every gradient fails naming those missing", "[training]") {
  Scope s = Scope::NewRootScope();
  testing::SpiralMlp m = testing::BuildSpiralMlp(s, 7);
  autodiff::GradientDescentOptimizer sgd(autodiff::ConstantLearningRate(s, 0.1));
  auto optimizer = std::make_unique<dist::DistributedOptimizer>(
      sgd, 0, 1, [](std::vector<dist::GradientSpec>) { return dist::MakeSingleWorkerStrategy(); },
      std::chrono::milliseconds(300));
  std::vector<autodiff::GradAndVar> grads = optimizer->ComputeGradients(s, m.loss);
  Node* train = optimizer->ApplyGradients(s, grads);
  Node* init = ops::GlobalVariablesInitializer(s);
  Session session(s, {.num_threads = 1});
  session.Run({}, {}, {init});
  auto data = models::MakeSpirals({.points_per_class = 20, .seed = 5});
  FeedList feeds = {{m.x, data.points}, {m.labels, data.labels}};
  session.Run(feeds, {}, {train});  // a whole step works

  // Fetching one averaged gradient alone: the others never come.
  auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(session.Run(feeds, {grads[0].grad}),
                    Catch::Contains("gradients reached the all-reduce within 300 ms of the first; never computed: "));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  // The group may be mid-collective now: it refuses to go on.
  CHECK_THROWS_WITH(session.Run(feeds, {}, {train}), Catch::Contains("stopped after an earlier step failed"));

  // A graph whose optimizer is gone says so.
  optimizer.reset();
  CHECK_THROWS_WITH(session.Run(feeds, {}, {train}),
                    Catch::Contains("must live as long as its session runs"));
}

TEST_CASE("DistributedOptimizer: workers that cannot join fail once, then at once", "[training]") {
  Scope s = Scope::NewRootScope();
  testing::SpiralMlp m = testing::BuildSpiralMlp(s, 7);
  autodiff::GradientDescentOptimizer sgd(autodiff::ConstantLearningRate(s, 0.1));
  int attempts = 0;
  dist::DistributedOptimizer optimizer(sgd, 0, 2, [&](std::vector<dist::GradientSpec>) -> std::unique_ptr<dist::DataParallelStrategy> {
    ++attempts;
    Fail(Code::kUnavailable, "worker 1 never answered");
  });
  Node* train = optimizer.Minimize(s, m.loss);
  Node* init = ops::GlobalVariablesInitializer(s);
  Session session(s, {.num_threads = 1});
  session.Run({}, {}, {init});
  auto data = models::MakeSpirals({.points_per_class = 20, .seed = 5});
  FeedList feeds = {{m.x, data.points}, {m.labels, data.labels}};
  CHECK_THROWS_WITH(session.Run(feeds, {}, {train}), Catch::Contains("worker 1 never answered"));
  CHECK_THROWS_WITH(session.Run(feeds, {}, {train}), Catch::Contains("stopped after an earlier step failed"));
  CHECK(attempts == 1);
}

TEST_CASE("DistributedOptimizer refuses gradients added after the workers joined", "[training]") {
  unsetenv("DFLOW_CLUSTER");
  Scope s = Scope::NewRootScope();
  autodiff::GradientDescentOptimizer sgd(autodiff::ConstantLearningRate(s, 0.1));
  testing::SpiralMlp m = testing::BuildSpiralMlp(s, 7);
  dist::DistributedOptimizer optimizer(sgd);
  Node* train = optimizer.Minimize(s, m.loss, {autodiff::TrainableVariables(s.graph())[0]});
  Node* init = ops::GlobalVariablesInitializer(s);
  Node* sync = optimizer.BroadcastVariables(s);
  Session session(s, {.num_threads = 1});
  session.Run({}, {}, {init});
  session.Run({}, {}, {sync});
  (void)train;
  CHECK_THROWS_WITH(optimizer.ComputeGradients(s, m.loss), Catch::Contains("added after the workers joined"));
  CHECK_THROWS_WITH(optimizer.Minimize(s, m.loss), Catch::Contains("already called"));
}

}  // namespace
}  // namespace dflow

// RingAllReduceStrategy and the strategy switch: bad calls fail naming what
// was wrong; AnyWorker agrees across workers; one worker's mean is itself;
// gradients handed over one at a time (overlap) average to the same bits.
#include <catch2/catch.hpp>

#include <thread>

#include "dist/cluster.h"
#include "dist/collectives/in_process_link.h"
#include "dist/training/ring_training.h"
#include "tests/dist/replicated_mlp.h"

namespace dflow {
namespace {

using Catch::Contains;

TEST_CASE("RingAllReduceStrategy refuses a wrong gradient count and unknown variables", "[ring_training]") {
  testing::ReplicatedMlp m = testing::BuildReplicatedMlp();
  Session session(m.scope, {.num_threads = 1});
  session.Run({}, {}, {m.init});
  dist::InProcessNetwork network(1);
  dist::RingAllReduceStrategy strategy(network.endpoint(0), testing::GradientSpecsOf(m));
  CHECK(strategy.is_chief());
  CHECK_THROWS_WITH(strategy.AverageGradients({Tensor::Scalar<float>(1)}),
                    Contains("got 1 gradients for " + std::to_string(m.vars.size()) + " specs"));
  CHECK_THROWS_WITH(strategy.SynchronizeVariables(session, {"no_such_variable"}),
                    Contains("'no_such_variable'"));
  dist::ReplicatedStep step = testing::ReplicatedStepOf(m);
  step.gradient_feeds.pop_back();
  CHECK_THROWS_WITH(dist::RunDataParallelStep(session, strategy, step, {}), Contains("gradient feeds"));
  // One worker: the mean is the gradients themselves.
  std::vector<Tensor> grads = testing::ComputeGradients(session, m, testing::WorkerBatch(
      models::MakeSpirals({.points_per_class = 20, .seed = 1}), 0, 1, 0, 8));
  std::vector<Tensor> mean = strategy.AverageGradients(grads);
  for (size_t v = 0; v < grads.size(); ++v) CHECK(mean[v].Equals(grads[v]));
}

TEST_CASE("Gradients handed over one at a time average to AverageGradients' bits", "[ring_training]") {
  const int workers = 3;
  dist::InProcessNetwork network(workers);
  testing::ReplicatedMlp m = testing::BuildReplicatedMlp();
  models::LabelledPoints data = models::MakeSpirals({.points_per_class = 20, .seed = 1});
  std::vector<std::vector<Tensor>> at_once(workers), one_by_one(workers);
  std::vector<std::string> errors(workers);
  std::vector<std::thread> threads;
  for (int r = 0; r < workers; ++r)
    threads.emplace_back([&, r] {
      try {
        Session session(m.scope, {.num_threads = 1});
        session.Run({}, {}, {m.init});
        std::vector<Tensor> grads = testing::ComputeGradients(session, m, testing::WorkerBatch(data, r, workers, 0, 8));
        dist::RingAllReduceStrategy strategy(network.endpoint(r), testing::GradientSpecsOf(m));
        at_once[r] = strategy.AverageGradients(grads);
        // Last first, as backprop hands them over.
        for (int i = static_cast<int>(grads.size()) - 1; i >= 0; --i) strategy.GradientReady(i, grads[i]);
        one_by_one[r] = strategy.AverageReadyGradients();
        strategy.Finish();
      } catch (const Error& e) {
        errors[r] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  REQUIRE(errors == std::vector<std::string>(workers));
  for (int r = 0; r < workers; ++r)
    for (size_t v = 0; v < m.vars.size(); ++v) {
      CHECK(one_by_one[r][v].Equals(at_once[r][v]));
      CHECK(one_by_one[r][v].Equals(one_by_one[0][v]));
    }
}

TEST_CASE("Gradients handed over twice or never fail naming the gradient", "[ring_training]") {
  testing::ReplicatedMlp m = testing::BuildReplicatedMlp();
  dist::InProcessNetwork network(1);
  dist::RingAllReduceStrategy strategy(network.endpoint(0), testing::GradientSpecsOf(m));
  Tensor zeros = Tensor::Zeros(DType::kFloat32, m.vars[0].shape());
  strategy.GradientReady(0, zeros);
  CHECK_THROWS_WITH(strategy.GradientReady(0, zeros), Contains("gradient 0 was handed over twice"));
  CHECK_THROWS_WITH(strategy.GradientReady(-1, zeros), Contains("gradient index -1 is negative"));
  strategy.GradientReady(2, zeros);
  CHECK_THROWS_WITH(strategy.AverageReadyGradients(), Contains("gradient 1 was never handed over"));
}

TEST_CASE("AnyWorker is true on every worker when one says so", "[ring_training]") {
  const int workers = 3;
  dist::InProcessNetwork network(workers);
  std::vector<int> answers(workers, -1);
  std::vector<std::string> errors(workers);
  std::vector<std::thread> threads;
  testing::ReplicatedMlp m = testing::BuildReplicatedMlp();
  for (int r = 0; r < workers; ++r)
    threads.emplace_back([&, r] {
      try {
        dist::RingAllReduceStrategy strategy(network.endpoint(r), testing::GradientSpecsOf(m));
        bool first = strategy.AnyWorker(false);
        bool second = strategy.AnyWorker(r == 2);
        answers[r] = (first ? 10 : 0) + (second ? 1 : 0);
        strategy.Finish();
      } catch (const Error& e) {
        errors[r] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  CHECK(errors == std::vector<std::string>(workers));
  CHECK(answers == std::vector<int>{1, 1, 1});
}

TEST_CASE("The strategy switch: ring connects, ps and others fail clearly", "[ring_training]") {
  CHECK_NOTHROW(dist::RequireStrategy("ring"));
  try {
    dist::RequireStrategy("ps");
    FAIL("ps accepted");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kUnimplemented);
    CHECK_THAT(e.what(), Contains("not available in this build"));
  }
  CHECK_THROWS_WITH(dist::RequireStrategy("star"), Contains("unknown data-parallel strategy 'star'"));
  auto ps_task = dist::ClusterSpec::Parse(
      R"({"cluster": {"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]}, "task": {"type": "ps", "index": 0}})", "test");
  CHECK_THROWS_WITH(dist::MakeDataParallelStrategy("ring", ps_task, {}), Contains("a \"worker\" (got \"ps\")"));
}

}  // namespace
}  // namespace dflow

// The spiral MLP trained data-parallel by 3 workers two ways, in one process:
// ring all-reduce (threads, each with its own Session, initial variables
// broadcast from rank 0, gradients handed to GradientBuckets in backprop
// order) and a synchronous parameter server (SyncGradientAccumulator, pushes
// arriving in a different order every step). With rank-order summation both
// give the same parameters, bit for bit, after every step count.
#include <catch2/catch.hpp>
#include <thread>

#include "dist/collectives/gradient_buckets.h"
#include "dist/collectives/in_process_link.h"
#include "dist/training/ring_training.h"
#include "tests/dist/replicated_mlp.h"

namespace dflow {
namespace {

using testing::ReplicatedMlp;

const int kWorkers = 3;
const int kSteps = 15;
const int64_t kBatch = 16;

std::vector<Tensor> ReadVariables(Session& session, const ReplicatedMlp& m) {
  return session.Run(std::vector<TensorName>(m.vars.begin(), m.vars.end()));
}

// The same worker as the data_parallel_mlp program runs in each process
// (tests/dist/training/test_ring_processes.sh): a RingAllReduceStrategy broadcasts rank
// 0's initial values (the replicas were built with different seeds, so without
// it they would start apart) and averages each step's gradients in buckets.
void RingWorker(dist::PointToPoint& link, const models::LabelledPoints& data,
                std::vector<Tensor>& final_variables) {
  const int rank = link.rank();
  ReplicatedMlp m = testing::BuildReplicatedMlp(/*seed=*/7 + rank);
  Session session(m.scope, {.num_threads = 1});
  session.Run({}, {}, {m.init});
  dist::RingOptions options;
  options.buckets.bucket_bytes = 2048;
  dist::RingAllReduceStrategy strategy(link, testing::GradientSpecsOf(m), options);
  strategy.SynchronizeVariables(session, session.resources().VariableNames());
  testing::TrainReplica(session, m, strategy, data, kSteps, kBatch);
  strategy.Finish();
  final_variables = ReadVariables(session, m);
}

std::vector<std::vector<Tensor>> TrainWithRing(const models::LabelledPoints& data) {
  dist::InProcessNetwork network(kWorkers);
  std::vector<std::vector<Tensor>> finals(kWorkers);
  std::vector<std::string> errors(kWorkers);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorkers; ++r)
    threads.emplace_back([&, r] {
      try {
        RingWorker(network.endpoint(r), data, finals[r]);
      } catch (const Error& e) {
        errors[r] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::string& error : errors) REQUIRE(error.empty());
  return finals;
}

TEST_CASE("ring all-reduce and a sync parameter server train to the same bits", "[training][ps]") {
  auto data = models::MakeSpirals({.points_per_class = 200, .seed = 5});
  std::vector<std::vector<Tensor>> ring = TrainWithRing(data);
  std::vector<Tensor> ps = testing::TrainSyncInOneProcess(data, kWorkers, kSteps, kBatch);
  std::vector<Tensor> initial = [] {
    ReplicatedMlp m = testing::BuildReplicatedMlp(7);
    Session session(m.scope, {.num_threads = 1});
    session.Run({}, {}, {m.init});
    return ReadVariables(session, m);
  }();
  REQUIRE(ps.size() == initial.size());
  for (int r = 0; r < kWorkers; ++r) {
    REQUIRE(ring[r].size() == ps.size());
    for (size_t v = 0; v < ps.size(); ++v) {
      INFO("rank " << r << ", variable " << v);
      CHECK(ring[r][v].Equals(ps[v]));
      CHECK_FALSE(ps[v].Equals(initial[v]));  // training moved every variable
    }
  }
}

}  // namespace
}  // namespace dflow

// The spiral MLP as data-parallel tests use it: gradients are fetched, and
// the (averaged) gradients are fed back into placeholders that Adam applies;
// plus each worker's shard and batch.
#pragma once

#include <functional>
#include <vector>

#include "dist/training/data_parallel.h"
#include "graph/session.h"
#include "models/data/spirals.h"

namespace dflow::testing {

struct ReplicatedMlp {
  Scope scope = Scope::NewRootScope();
  Output x, labels, logits;
  std::vector<Output> vars, grads, mean_grads;  // mean_grads are fed
  Node* apply = nullptr;
  Node* init = nullptr;
};

// The model alone: placeholders, two ReLU layers of 32, a 3-class output
// and the mean cross-entropy, on `scope`'s graph with graph seed `seed`.
struct SpiralMlp {
  Output x, labels, logits, loss;
};
SpiralMlp BuildSpiralMlp(const Scope& scope, int64_t seed);

// The model, its gradients and Adam (learning rate 0.01) applied to fed
// gradients; replicas built with one graph seed start from the same weights.
ReplicatedMlp BuildReplicatedMlp(int64_t seed = 7);

// Worker k's batch of step `step`: rows k, k + N, k + 2N, ... of `data`
// taken `batch` at a time, wrapping around.
models::LabelledPoints WorkerBatch(const models::LabelledPoints& data, int k, int num_workers,
                                   int step, int64_t batch);

// The gradients of `m` on one batch, in m.vars order.
std::vector<Tensor> ComputeGradients(Session& session, const ReplicatedMlp& m,
                                     const models::LabelledPoints& batch);

// Feeds one gradient per variable and runs Adam's update.
void ApplyGradients(Session& session, const ReplicatedMlp& m, const std::vector<Tensor>& grads);

// The names RunDataParallelStep needs, and the specs of the gradients it averages.
dist::ReplicatedStep ReplicatedStepOf(const ReplicatedMlp& m);
std::vector<dist::GradientSpec> GradientSpecsOf(const ReplicatedMlp& m);

// Trains worker `strategy.worker()` from the variables' current global step
// until `steps`, on its shard of `data` (WorkerBatch), calling
// `after_step(global_step)` after each step.
void TrainReplica(Session& session, const ReplicatedMlp& m, dist::DataParallelStrategy& strategy,
                  const models::LabelledPoints& data, int64_t steps, int64_t batch,
                  const std::function<void(int64_t)>& after_step = {});

// A synchronous parameter server in one process, the reference the
// distributed runs must match bit for bit: each step, every worker's
// gradients on its batch (from the same variables) go to a
// SyncGradientAccumulator, arriving in a different order each step, and
// Adam applies their mean. Returns the variables (seed 7) after `steps`.
std::vector<Tensor> TrainSyncInOneProcess(const models::LabelledPoints& data, int num_workers,
                                          int steps, int64_t batch);

}  // namespace dflow::testing

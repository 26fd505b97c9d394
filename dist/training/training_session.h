// A session that runs a DistributedOptimizer's training steps under either
// strategy (TensorFlow 1's MonitoredTrainingSession): it initialises the
// variables (the chief, restoring a checkpoint if asked), makes every worker
// start from the same values, runs one training step per Run and knows when
// the job's steps are over.
// - Ring: a Session in this process; the chief initialises and restores,
//   then every worker takes the chief's values (BroadcastVariables).
// - Parameter servers: a session over the ps tasks and this worker's own
//   server (dist::PsWorker); the chief initialises, the others wait for it;
//   in sync mode every step carries its global step.
//
//   dist::TrainingSession session(scope, optimizer, {.num_steps = 600});
//   while (!session.ShouldStop())
//     session.Run(this_workers_batch(session.next_step()), {loss});
//   session.Close();                       // every worker's steps are done
//   if (session.is_chief()) Saver(scope, session.variables()).Save(session.session(), "run/");
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "dist/training/distributed_optimizer.h"
#include "graph/session.h"

namespace dflow::dist {

struct TrainingSessionOptions {
  // Global steps: ShouldStop once the job took this many (counting those
  // of a restored checkpoint).
  int64_t num_steps = 100;
  // The chief's, after it initialised the variables: assign `variables`
  // (what a checkpoint holds, variables() below) through the session:
  //   .restore = [&](Session& s, const auto& vars) { Saver(scope, vars).Restore(s, path); }
  std::function<void(Session& session, const std::vector<Output>& variables)> restore{};
  // Ring: this process's session (devices, threads). Parameter servers
  // place the graph themselves.
  SessionOptions session{};
};

class TrainingSession {
 public:
  // After the optimizer's Minimize (or ApplyGradients): adds the
  // initialiser (and, on the ring, the broadcast) to the graph, then starts
  // the session and initialises.
  TrainingSession(const Scope& scope, DistributedOptimizer& optimizer, TrainingSessionOptions options);
  // The chief stops the ps tasks here (after an error, telling the other
  // workers so), if Close or an error did not already.
  ~TrainingSession();
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;

  // One training step on this worker's `feeds`; returns `fetches`' values.
  std::vector<Tensor> Run(FeedList feeds, const std::vector<TensorName>& fetches = {});
  bool ShouldStop() const;
  // The global step the next Run trains. Asynchronous parameter servers
  // apply every worker's updates as they come; there it is the last one
  // this worker saw.
  int64_t global_step() const;
  // Which batch the next Run wants: the global step, except with
  // asynchronous parameter servers, where it is this worker's own count.
  int64_t next_step() const;
  // After the last step: tells the job this worker is done and waits until
  // every worker is. The variables can still be read (the chief evaluates
  // and checkpoints here); the ps tasks stop when the chief's session goes.
  void Close();

  int worker() const { return worker_; }
  int num_workers() const { return num_workers_; }
  bool is_chief() const { return worker_ == 0; }
  // To read variables, evaluate, checkpoint.
  Session& session();
  // What a checkpoint holds: the model's variables, the optimizer's slots
  // and the global step (not the strategy's own state).
  const std::vector<Output>& variables() const { return variables_; }

 private:
  void StartRing(const Scope& scope, DistributedOptimizer& optimizer);
  [[noreturn]] void Failed(const Error& error);

  TrainingSessionOptions options_;
  int worker_ = 0, num_workers_ = 1;
  std::vector<Output> variables_;
  Node* train_op_ = nullptr;
  // Ring.
  std::shared_ptr<DataParallelGroup> group_;
  std::unique_ptr<Session> session_;
  int64_t ring_step_ = 0;
  // Parameter servers.
  std::unique_ptr<PsWorker> ps_worker_;
  bool ps_stopped_ = false;
  bool closed_ = false;
};

}  // namespace dflow::dist

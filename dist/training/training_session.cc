#include "dist/training/training_session.h"

#include <iostream>

#include "autodiff/learning_rate.h"
#include "dist/training/ps_training_graph.h"
#include "ops/ops.h"

namespace dflow::dist {

TrainingSession::TrainingSession(const Scope& scope, DistributedOptimizer& optimizer, TrainingSessionOptions options)
    : options_(std::move(options)),
      worker_(optimizer.worker()),
      num_workers_(optimizer.num_workers()),
      train_op_(optimizer.train_op()) {
  DFLOW_REQUIRE(train_op_ != nullptr, "TrainingSession: call the DistributedOptimizer's Minimize (or ",
                "ApplyGradients) first: the session runs its train op");
  DFLOW_REQUIRE(options_.num_steps >= 0, "TrainingSession: num_steps must be >= 0, got ", options_.num_steps);
  if (!optimizer.uses_parameter_servers()) {
    StartRing(scope, optimizer);
    return;
  }
  DFLOW_REQUIRE(optimizer.ps_ops_ != nullptr, "TrainingSession: another TrainingSession already runs this ",
                "optimizer's parameter-server steps (one per optimizer)");
  variables_ = optimizer.ps_ops_->variables;
  PsTrainingOptions ps = optimizer.ps_options_;
  ps.num_steps = options_.num_steps;
  ps_worker_ = std::make_unique<PsWorker>(scope, std::move(optimizer.ps_ops_), *optimizer.ps_task_, ps);
  if (options_.restore)
    ps_worker_->RestoreWith([this](Session& session) { options_.restore(session, variables_); });
  try {
    ps_worker_->Start();
  } catch (const Error& e) {
    Failed(e);
  }
}

// The chief initialises (and restores), then every worker assigns itself
// the chief's values, so all start from one set of variables and one
// global step.
void TrainingSession::StartRing(const Scope& scope, DistributedOptimizer& optimizer) {
  Output global_step = autodiff::GetOrCreateGlobalStep(scope);
  for (Node* node : scope.graph().nodes())
    if (node->op() == "VariableV2") variables_.emplace_back(node);
  Node* init = ops::GlobalVariablesInitializer(scope.NewSubScope("training_session").WithOpName("init"));
  Node* broadcast = optimizer.BroadcastVariables(scope);
  group_ = optimizer.group();
  session_ = std::make_unique<Session>(scope, options_.session);
  session_->Run({}, {}, {init});
  if (is_chief() && options_.restore) options_.restore(*session_, variables_);
  session_->Run({}, {}, {broadcast});
  ring_step_ = *session_->Run({global_step})[0].data<int64_t>();
}

TrainingSession::~TrainingSession() {
  if (!ps_worker_ || !is_chief() || ps_stopped_) return;
  try {
    ps_worker_->StopParameterServers(closed_ ? 1 : 2);
  } catch (const Error& e) {
    std::cerr << "chief: could not stop the ps tasks: " << e.message() << std::endl;
  }
}

std::vector<Tensor> TrainingSession::Run(FeedList feeds, const std::vector<TensorName>& fetches) {
  DFLOW_REQUIRE(!closed_, "TrainingSession: Run after Close");
  DFLOW_REQUIRE(!ShouldStop(), "TrainingSession: the job's ", options_.num_steps, " steps are done (global step ",
                global_step(), "); check ShouldStop before each step");
  if (!ps_worker_) {
    std::vector<Tensor> out = session_->Run(feeds, fetches, {train_op_});
    ++ring_step_;
    return out;
  }
  try {
    return ps_worker_->Step(std::move(feeds), fetches).fetched;
  } catch (const Error& e) {
    Failed(e);
  }
}

bool TrainingSession::ShouldStop() const { return ps_worker_ ? ps_worker_->Done() : ring_step_ >= options_.num_steps; }

int64_t TrainingSession::global_step() const { return ps_worker_ ? ps_worker_->global_step() : ring_step_; }

int64_t TrainingSession::next_step() const { return ps_worker_ ? ps_worker_->next_step() : ring_step_; }

void TrainingSession::Close() {
  if (closed_) return;
  if (!ps_worker_) {
    group_->Finish();
  } else {
    try {
      ps_worker_->FinishSteps();
    } catch (const Error& e) {
      Failed(e);
    }
  }
  closed_ = true;
}

Session& TrainingSession::session() { return ps_worker_ ? ps_worker_->session() : *session_; }

void TrainingSession::Failed(const Error& error) {
  ps_stopped_ = true;  // the chief's Failed stops them
  ps_worker_->Failed(error);
}

}  // namespace dflow::dist

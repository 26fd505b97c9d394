#include "dist/training/ps_training.h"

#include <iostream>
#include <thread>

#include "dist/training/ps_training_graph.h"
#include "dist/runtime/worker_service.h"
#include "dist/transport/zmq_channel.h"
#include "dist/transport/zmq_server.h"

namespace dflow::dist {
namespace {

using Clock = std::chrono::steady_clock;

Tensor Int64(int64_t value) { return Tensor::Scalar<int64_t>(value); }

// Asks the task for its status until it answers or `deadline` passes (a
// fresh channel each try: a refused connection must not wait out the
// heartbeat timeout).
void WaitUntilServing(const std::string& task_prefix, const std::string& address, Clock::time_point deadline) {
  while (true) {
    Channel channel(task_prefix, address);
    Message request;
    request.type = MessageType::kGetStatus;
    request.deadline_ms = DeadlineIn(500);
    try {
      channel.CallAndWait(request);
      return;
    } catch (const Error& e) {
      if (Clock::now() >= deadline)
        Fail(Code::kUnavailable, "task ", task_prefix, " at ", address, " did not answer in time: ", e.message());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

PsWorker::PsWorker(const Scope& scope, const std::vector<autodiff::GradAndVar>& grads_and_vars,
                   autodiff::Optimizer& optimizer, PsTask task, PsTrainingOptions options)
    : PsWorker(scope, BuildPsTrainingOps(scope, grads_and_vars, optimizer, task, options), task, options) {}

PsWorker::PsWorker(const Scope& scope, std::unique_ptr<Ops> ops, PsTask task, PsTrainingOptions options)
    : task_(std::move(task)), options_(options), ops_(std::move(ops)) {
  DFLOW_REQUIRE(options_.num_steps >= 0, "PsWorker: num_steps must be >= 0, got ", options_.num_steps);
  StartServer();
  auto deadline = Clock::now() + options_.startup_timeout;
  for (int k = 0; k < task_.num_ps(); ++k)
    WaitUntilServing(ClusterSpec::TaskPrefix({"ps", k}), task_.cluster.Address({"ps", k}), deadline);
  SessionOptions session_options;
  session_options.target = "zmq://" + task_.cluster.Address(task_.task);
  session_options.device_filters = {"/job:ps", ClusterSpec::TaskPrefix(task_.task)};
  session_ = std::make_unique<Session>(scope, session_options);
}

PsWorker::~PsWorker() {
  session_.reset();
  if (server_) server_->Stop();
}

// The worker task's own server: its partitions run there, and the ps tasks
// fetch its gradients from it (TensorFlow's workers run a server too).
void PsWorker::StartServer() {
  service_ = std::make_unique<WorkerService>(task_.cluster, task_.task, options_.num_threads);
  std::string address = options_.bind;
  if (address.empty())
    address = StrCat("127.0.0.1:", ParseHostPort(task_.cluster.Address(task_.task), "the task's address").second);
  server_ = std::make_unique<MessageServer>(address, [this](Message request, MessageServer::Respond respond) {
    service_->Handle(std::move(request), std::move(respond));
  });
}

// Initialise (and restore), then say ready: the other workers wait for
// that last step, so none reads or pushes before the restore.
void PsWorker::Initialise() {
  session_->Run({}, {}, {ops_->init});
  if (restore_) {
    restore_(*session_);
    if (options_.mode == PsMode::kSync) {
      Tensor step = session_->Run({ops_->global_step})[0];
      std::vector<TensorName> set_steps(ops_->set_steps.begin(), ops_->set_steps.end());
      session_->Run({{ops_->restored_step, step}}, {}, set_steps);
    }
  }
  session_->Run({}, {}, {ops_->ready});
}

const std::vector<Output>& PsWorker::variables() const { return ops_->variables; }

// TensorFlow's SessionManager.wait_for_session: poll until every variable
// has a value, never initialising anything ourselves.
std::string PsWorker::UninitialisedVariables() {
  std::vector<TensorName> checks(ops_->initialized.begin(), ops_->initialized.end());
  std::vector<Tensor> ready = session_->Run(checks);
  std::string missing;
  for (size_t i = 0; i < ready.size(); ++i)
    if (!*ready[i].data<bool>()) missing += (missing.empty() ? "" : ", ") + ops_->variable_names[i];
  return missing;
}

void PsWorker::WaitUntilInitialised() {
  auto deadline = Clock::now() + options_.startup_timeout;
  while (true) {
    const std::string missing = UninitialisedVariables();
    if (missing.empty()) return;
    if (Clock::now() >= deadline)
      Fail(Code::kUnavailable, "worker ", task_.task.index, ": the chief did not initialise the variables within ",
           options_.startup_timeout.count(), " ms; still uninitialised: ", missing);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void PsWorker::Train(const BatchFn& batches, const std::vector<TensorName>& fetches, const StepFn& on_step,
                     const std::function<void()>& on_finished) {
  try {
    Start();
    while (!Done()) {
      PsStepResult result = Step(batches(next_step()), fetches);
      if (on_step) on_step(result);
    }
    if (!task_.is_chief() && on_finished) on_finished();
    FinishSteps();
    if (task_.is_chief()) {
      if (on_finished) on_finished();
      StopParameterServers(1);
    }
  } catch (const Error& e) {
    Failed(e);
  }
}

// A chief restarted into a running job (the ps tasks hold every variable)
// joins it as the others do instead of initialising them again.
void PsWorker::Start() {
  if (task_.is_chief() && !UninitialisedVariables().empty()) {
    Initialise();
  } else {
    WaitUntilInitialised();
    if (task_.is_chief()) std::cerr << "chief: the parameter servers hold every variable: rejoining a running job\n";
  }
  global_step_ = *session_->Run({ops_->initial_step})[0].data<int64_t>();
  own_steps_ = 0;
  first_step_ = true;
}

PsStepResult PsWorker::Step(FeedList feeds, const std::vector<TensorName>& fetches) {
  PsStepResult result =
      options_.mode == PsMode::kSync ? StepSync(std::move(feeds), fetches) : StepAsync(feeds, fetches);
  global_step_ = result.global_step;
  ++own_steps_;
  first_step_ = false;
  return result;
}

void PsWorker::FinishSteps() {
  session_->Run({}, {}, {ops_->finish});
  if (task_.is_chief()) WaitForOtherWorkers();
}

void PsWorker::Failed(const Error& e) {
  // A worker's step waits for the chief's: a step that never comes means
  // the chief (or another worker it waits for) is gone.
  if (!task_.is_chief())
    throw Error(e.code(), StrCat("parameter-server training failed on ", ClusterSpec::TaskPrefix(task_.task),
                                 " (the chief ", ClusterSpec::TaskPrefix({"worker", 0}),
                                 " finishes each step): ", e.message()));
  try {
    StopParameterServers(2);
  } catch (const Error& stop_error) {
    std::cerr << "chief: could not stop the ps tasks: " << stop_error.message() << std::endl;
  }
  throw Error(e.code(), StrCat("parameter-server training failed on the chief (",
                               ClusterSpec::TaskPrefix(task_.task), "): ", e.message()));
}

// Sync: one Run per global step: the chief's pushes, takes the means,
// applies and finishes; the others' push and wait. The first step waits for
// everyone to start, so it gets startup_timeout.
PsStepResult PsWorker::StepSync(FeedList feeds, const std::vector<TensorName>& fetches) {
  std::vector<TensorName> all = {ops_->next_step};
  all.insert(all.end(), fetches.begin(), fetches.end());
  auto timeout = first_step_ ? options_.startup_timeout : options_.step_timeout;
  // A worker waits for the chief, who waits for the slowest worker.
  if (!task_.is_chief()) timeout += options_.step_timeout;
  feeds.push_back({ops_->local_step, Int64(global_step_)});
  feeds.push_back({ops_->timeout_ms, Int64(timeout.count())});
  std::vector<Tensor> out = session_->Run(feeds, all);
  return {global_step_, *out[0].data<int64_t>(), 0, {out.begin() + 1, out.end()}};
}

// Async: one Run per update: gradients from the parameters as they are,
// applied on the ps at once; the staleness log says how many updates came
// between.
PsStepResult PsWorker::StepAsync(const FeedList& feeds, const std::vector<TensorName>& fetches) {
  std::vector<TensorName> all = {ops_->initial_step, ops_->staleness, ops_->next_step};
  all.insert(all.end(), fetches.begin(), fetches.end());
  std::vector<Tensor> out = session_->Run(feeds, all);
  return {*out[0].data<int64_t>(), *out[2].data<int64_t>(), *out[1].data<int64_t>(), {out.begin() + 3, out.end()}};
}

// Each worker adds one to workers_done as it leaves; a dead one never does,
// so the chief gives up after finish_timeout.
void PsWorker::WaitForOtherWorkers() {
  auto deadline = Clock::now() + options_.finish_timeout;
  int64_t done = 0;
  while ((done = *session_->Run({ops_->workers_done})[0].data<int64_t>()) < task_.num_workers()) {
    if (Clock::now() >= deadline) {
      std::cerr << "chief: only " << done << " of " << task_.num_workers() << " workers finished within "
                << options_.finish_timeout.count() << " ms; stopping the ps tasks" << std::endl;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// After an error the accumulators are aborted too: the workers waiting for
// the next step fail at once, saying the chief stopped.
void PsWorker::StopParameterServers(int64_t code) {
  DFLOW_REQUIRE(task_.is_chief(), "only the chief stops the ps tasks, not ", ClusterSpec::TaskPrefix(task_.task));
  std::vector<TensorName> stops(ops_->stops.begin(), ops_->stops.end());
  if (code != 1) stops.insert(stops.end(), ops_->aborts.begin(), ops_->aborts.end());
  session_->Run({{ops_->stop_code, Int64(code)}}, {}, stops);
}

int64_t PsWorker::DroppedStale() {
  int64_t dropped = 0;
  std::vector<TensorName> fetches(ops_->dropped_stale.begin(), ops_->dropped_stale.end());
  for (const Tensor& t : session_->Run(fetches)) dropped += *t.data<int64_t>();
  return dropped;
}

}  // namespace dflow::dist

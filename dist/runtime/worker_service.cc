#include "dist/runtime/worker_service.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <random>

#include "dist/runtime/step_stats_json.h"
#include "graph/graph_io.h"
#include "graph/json.h"
#include "graph/step_runner.h"

namespace dflow::dist {

using json = nlohmann::json;

// One RunStep in flight: what the step runner reads and writes until it ends.
struct WorkerService::StepRun {
  std::vector<Tensor> args, retvals;
  std::shared_ptr<ZmqRendezvous> rendezvous;
  std::vector<std::shared_ptr<PartitionRunner>> runners;  // kept alive for the step
  MessageServer::Respond respond;
  bool trace = false;     // the client asked for the step's stats
  RunMetadata metadata;   // when tracing
};

namespace {

json ParseBody(const Message& request) {
  // A request is untrusted: ParseJson bounds its nesting (see graph/json.h).
  try {
    return ParseJson(request.text, "its text");
  } catch (const Error& e) {
    Fail(e.code(), "bad ", MessageTypeName(request.type), " request: ", e.message());
  }
}

// doc[name] as T, or kInvalidArgument naming the request and the field.
template <typename T>
T Field(const json& doc, const char* name, const Message& request) {
  try {
    return doc.at(name).get<T>();
  } catch (const json::exception& e) {
    Fail(Code::kInvalidArgument, "bad ", MessageTypeName(request.type), " request: field '", name,
         "': ", JsonErrorMessage(e));
  }
}

Message Reply(std::string text = {}) {
  Message reply;
  reply.text = std::move(text);
  return reply;
}

// "arg:12" -> 12 for prefix "arg:"; -1 for anything else.
int64_t IndexOf(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix)) return -1;
  int64_t index = -1;
  auto digits = name.substr(prefix.size());
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  return error == std::errc() && end == digits.data() + digits.size() ? index : -1;
}

// Every feed a graph's _Arg nodes read is there with their dtype: the client
// checked, but a server trusts no message.
void CheckFeeds(const Graph& graph, const std::vector<Tensor>& args) {
  for (const Node* node : graph.nodes()) {
    if (node->op() != "_Arg") continue;
    auto index = node->attr<int64_t>("index");
    if (index < 0 || index >= static_cast<int64_t>(args.size()) || !args[index].valid())
      Fail(Code::kInvalidArgument, "bad RunStep request: ", node->Describe(), " needs feed arg:", index);
    if (args[index].dtype() != node->output_dtype(0))
      Fail(Code::kInvalidArgument, "bad RunStep request: ", node->Describe(), " needs ",
           DTypeName(node->output_dtype(0)), ", arg:", index, " is ", args[index].SummaryString());
  }
}

// The devices `task` has in `cluster`, by full name: its CPU first (graph
// passes run there), then its GPUs (gpus_per_task; one that is not
// visible stops the task from starting, naming why).
std::vector<std::string> TaskDevices(const ClusterSpec& cluster, const TaskId& task) {
  cluster.Address(task);  // throws naming the job and range when `task` is not in the cluster
  std::string prefix = ClusterSpec::TaskPrefix(task);
  std::vector<std::string> devices;
  for (const std::string& name : cluster.DeviceNames())
    if (name.starts_with(prefix + "/")) devices.push_back(name);
  if (devices.empty() || DeviceName::Parse(devices.front()).type != "CPU")
    Fail(Code::kInternal, "task ", prefix, " has no CPU device in the cluster");
  return devices;
}

int64_t DrawIncarnation() {
  std::random_device random;
  std::uniform_int_distribution<int64_t> draw(2, std::numeric_limits<int64_t>::max());
  return draw(random);
}

}  // namespace

WorkerService::WorkerService(ClusterSpec cluster, TaskId task, int num_threads, int64_t step_timeout_ms)
    : cluster_(std::move(cluster)), task_prefix_(ClusterSpec::TaskPrefix(task)),
      incarnation_(DrawIncarnation()), devices_(TaskDevices(cluster_, task), num_threads, &resources_),
      step_timeout_ms_(step_timeout_ms) {
  if (step_timeout_ms < 0)
    Fail(Code::kInvalidArgument, "the step timeout must be 0 (none) or positive, not ", step_timeout_ms, " ms");
  if (step_timeout_ms_ > 0) reaper_ = std::thread([this] { ReapLoop(); });
}

// Aborting wakes every Recv, so each running step finishes its current
// kernel and skips the rest. (Aborts run outside mu_: their callbacks take it.)
WorkerService::~WorkerService() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  reaper_wake_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  std::vector<std::shared_ptr<ZmqRendezvous>> steps;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, step] : steps_) steps.push_back(step.rendezvous);
  }
  for (auto& rendezvous : steps)
    rendezvous->AbortFromPeer(Error(Code::kCancelled, StrCat("task ", task_prefix_, " is shutting down")));
  std::unique_lock<std::mutex> lock(mu_);
  steps_done_.wait(lock, [&] { return running_steps_ == 0; });
  // Variables may hold a device's memory: free them (and the partitions)
  // while devices_ and its allocators still exist.
  graphs_.clear();
  lock.unlock();
  resources_.Clear();
}

void WorkerService::Handle(Message request, MessageServer::Respond respond, const std::string& client) {
  switch (request.type) {
    case MessageType::kGetStatus: return respond(GetStatus());
    case MessageType::kRegisterGraph: return RegisterGraphOffIoThread(std::move(request), std::move(respond));
    case MessageType::kDeregisterGraph: return respond(DeregisterGraph(request));
    case MessageType::kRunStep: return RunStep(request, std::move(respond), client);
    case MessageType::kSendTensor: return TensorFromPeer(request);  // no reply: a push
    case MessageType::kAbortStep: return respond(AbortStep(request));
    case MessageType::kCleanupStep: return respond(CleanupStep(request));
    default:
      Fail(Code::kInvalidArgument, "a worker does not serve ", MessageTypeName(request.type), " requests");
  }
}

Message WorkerService::GetStatus() const {
  json doc = {{"task", task_prefix_}, {"incarnation", incarnation_}, {"devices", device_names()},
              {"clock_ns", SteadyClockNs()},
              {"cluster", cluster_.jobs()}};
  return Reply(doc.dump());
}

Message WorkerService::RegisterGraph(const Message& request) {
  json doc = ParseBody(request);
  std::string device = Field<std::string>(doc, "device", request);
  auto graph = GraphFromJson(Field<nlohmann::ordered_json>(doc, "graph", request),
                             StrCat("graph for ", device));
  const auto& names = device_names();
  if (std::find(names.begin(), names.end(), device) == names.end())
    Fail(Code::kInvalidArgument, "task ", task_prefix_, " has no device '", device, "' (it has ",
         json(names).dump(), ")");
  std::shared_ptr<PartitionRunner> runner = devices_.Load(device, graph);
  std::lock_guard<std::mutex> lock(mu_);
  int64_t handle = next_handle_++;
  graphs_[handle] = {std::move(graph), std::move(runner)};
  return Reply(json{{"handle", handle}}.dump());
}

// Parsing a graph and building its executor can take a while: done on the
// first device's pool, so the I/O thread keeps answering heartbeats. It
// counts as a running step, which the destructor waits for.
void WorkerService::RegisterGraphOffIoThread(Message request, MessageServer::Respond respond) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++running_steps_;
  }
  devices_.pass_device().compute_pool()->Schedule([this, request = std::move(request), respond = std::move(respond)] {
    try {
      respond(RegisterGraph(request));
    } catch (const Error& e) {
      respond(Message::ErrorReply(0, e));
    } catch (const std::exception& e) {
      respond(Message::ErrorReply(0, Error(Code::kInternal, e.what())));
    }
    std::lock_guard<std::mutex> lock(mu_);
    --running_steps_;
    steps_done_.notify_all();
  });
}

Message WorkerService::DeregisterGraph(const Message& request) {
  json doc = ParseBody(request);
  auto handles = Field<std::vector<int64_t>>(doc, "handles", request);
  std::lock_guard<std::mutex> lock(mu_);
  for (int64_t handle : handles) graphs_.erase(handle);
  return Reply();
}

std::shared_ptr<ZmqRendezvous> WorkerService::StepRendezvous(int64_t step_id, const std::string* client) {
  std::lock_guard<std::mutex> lock(mu_);
  return StepRendezvousLocked(step_id, client);
}

std::shared_ptr<ZmqRendezvous> WorkerService::StepRendezvousLocked(int64_t step_id, const std::string* client) {
  StepState& step = steps_[step_id];
  if (!step.rendezvous) {
    step.rendezvous = std::make_shared<ZmqRendezvous>(
        task_prefix_, incarnation_, [this](const std::string& task) -> Channel& { return PeerChannel(task); });
    step.created = Clock::now();
  }
  if (client) {
    step.run_came = true;
    step.client = *client;
  }
  return step.rendezvous;
}

Channel& WorkerService::PeerChannel(const std::string& task_prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& channel = peers_[task_prefix];
  if (!channel) {
    DeviceName name = DeviceName::Parse(task_prefix);
    channel = std::make_unique<Channel>(task_prefix, cluster_.Address({name.job, name.task.value_or(0)}));
  }
  return *channel;
}

void WorkerService::RunStep(const Message& request, MessageServer::Respond respond,
                            const std::string& client) {
  json doc = ParseBody(request);
  auto run = std::make_shared<StepRun>();
  auto step_id = Field<int64_t>(doc, "step_id", request);
  auto num_args = Field<int64_t>(doc, "num_args", request);
  auto num_retvals = Field<int64_t>(doc, "num_retvals", request);
  if (num_args < 0 || num_args > kMaxTensors || num_retvals < 0 || num_retvals > kMaxTensors)
    Fail(Code::kInvalidArgument, "bad RunStep request: num_args ", num_args, " or num_retvals ",
         num_retvals, " out of range");
  run->args.resize(num_args);
  run->retvals.resize(num_retvals);
  run->trace = doc.contains("trace") && Field<bool>(doc, "trace", request);
  for (const WireTensor& feed : request.tensors) {
    int64_t index = IndexOf(feed.name, "arg:");
    if (index < 0 || index >= num_args)
      Fail(Code::kInvalidArgument, "bad RunStep request: feed '", feed.name, "' is not arg:0..", num_args - 1);
    run->args[index] = feed.value;
  }
  std::vector<PartitionRunner*> partitions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t handle : Field<std::vector<int64_t>>(doc, "graphs", request)) {
      auto it = graphs_.find(handle);
      if (it == graphs_.end())
        Fail(Code::kNotFound, "task ", task_prefix_, " has no graph ", handle,
             " (it restarted, or the session closed)");
      CheckFeeds(*it->second.graph, run->args);
      run->runners.push_back(it->second.runner);
      partitions.push_back(it->second.runner.get());
    }
    ++running_steps_;
  }
  run->rendezvous = StepRendezvous(step_id, &client);
  run->respond = std::move(respond);
  RunOptions options;
  options.trace = run->trace;
  StartStep(partitions, {step_id, &run->args, &run->retvals, run->rendezvous.get()}, options,
            run->trace ? &run->metadata : nullptr,
            [this, run](std::optional<Error> error) { FinishStep(*run, std::move(error)); });
}

// Replies with the step's fetches, or with its first error: the
// rendezvous's (the origin, maybe on another task; the step runner puts it
// first) or else this task's own, named as this task's.
void WorkerService::FinishStep(StepRun& run, std::optional<Error> error) {
  if (error && !run.rendezvous->abort_error())
    error = Error(error->code(), StrCat("task ", task_prefix_, ": ", error->message()));
  if (error) {
    run.respond(Message::ErrorReply(0, *error));
  } else {
    Message reply;
    for (size_t i = 0; i < run.retvals.size(); ++i)
      if (run.retvals[i].valid()) reply.tensors.push_back({StrCat("ret:", i), run.retvals[i]});
    if (run.trace) reply.text = StepStatsToJson(run.metadata).dump();
    run.respond(std::move(reply));
  }
  std::lock_guard<std::mutex> lock(mu_);
  --running_steps_;
  steps_done_.notify_all();
}

// A tensor for a step that was already forgotten (aborted here, then
// cleaned up, while its sender went on) is dropped. A malformed one throws:
// the server replies with the error, which the pushing channel drops.
void WorkerService::TensorFromPeer(Message& request) {
  RendezvousKey key = KeyFromWire(request.text);
  if (request.tensors.size() != 1)
    Fail(Code::kInvalidArgument, "bad SendTensor for ", key.ToString(), ": it carries ",
         request.tensors.size(), " tensors, not 1");
  std::shared_ptr<ZmqRendezvous> rendezvous;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (forgotten_.count(key.step_id)) return;
    rendezvous = StepRendezvousLocked(key.step_id, nullptr);
  }
  rendezvous->DeliverFromPeer(key, std::move(request.tensors[0].value));
}

Message WorkerService::AbortStep(const Message& request) {
  json doc = ParseBody(request);
  auto code = Field<int>(doc, "code", request);
  if (code < 0 || code > static_cast<int>(Code::kInternal))
    Fail(Code::kInvalidArgument, "bad AbortStep request: field 'code' ", code, " is unknown");
  StepRendezvous(Field<int64_t>(doc, "step_id", request))
      ->AbortFromPeer(Error(static_cast<Code>(code), Field<std::string>(doc, "message", request)));
  return Reply();
}

Message WorkerService::CleanupStep(const Message& request) {
  json doc = ParseBody(request);
  int64_t step_id = Field<int64_t>(doc, "step_id", request);
  std::shared_ptr<ZmqRendezvous> finished;  // destroyed after the lock is released
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = steps_.find(step_id); it != steps_.end()) {
    finished = std::move(it->second.rendezvous);
    steps_.erase(it);
    Forget(step_id);
  }
  return Reply();
}

void WorkerService::Forget(int64_t step_id) {
  constexpr size_t kRememberForgotten = 4096;
  if (!forgotten_.insert(step_id).second) return;
  forgotten_order_.push_back(step_id);
  if (forgotten_order_.size() <= kRememberForgotten) return;
  forgotten_.erase(forgotten_order_.front());
  forgotten_order_.pop_front();
}

void WorkerService::WatchClients(std::shared_ptr<const ConnectionLiveness> liveness) {
  std::lock_guard<std::mutex> lock(mu_);
  clients_ = std::move(liveness);
}

size_t WorkerService::num_steps() const {
  std::lock_guard<std::mutex> lock(mu_);
  return steps_.size();
}

// Looks a few times per timeout (at least once a second), so a step is
// reaped at most a quarter of the timeout late.
void WorkerService::ReapLoop() {
  auto interval = std::chrono::milliseconds(std::clamp<int64_t>(step_timeout_ms_ / 4, 10, 1000));
  std::unique_lock<std::mutex> lock(mu_);
  while (!reaper_wake_.wait_for(lock, interval, [this] { return stopping_; })) {
    lock.unlock();
    ReapAbandonedSteps();
    lock.lock();
  }
}

// Why `step` should be aborted and forgotten now, if it should. (Under mu_.)
std::optional<std::string> WorkerService::WhyReap(int64_t step_id, const StepState& step,
                                                  Clock::time_point now) const {
  if (!step.run_came) {
    if (now - step.created <= std::chrono::milliseconds(step_timeout_ms_)) return std::nullopt;
    return StrCat("step ", step_id, " was aborted: peers sent it tensors but its RunStep did not come within ",
                  step_timeout_ms_, " ms (the step timeout; its client may have died)");
  }
  if (!clients_ || step.client.empty()) return std::nullopt;  // nobody to watch
  int64_t silent_ms = clients_->MillisSinceHeard(step.client);
  if (silent_ms >= 0 && silent_ms <= step_timeout_ms_) return std::nullopt;
  return StrCat("step ", step_id, " was aborted: its client was not heard from for ", step_timeout_ms_,
                " ms (the step timeout; it died or lost its connection)");
}

// Aborts outside mu_: the aborted Recvs' callbacks finish steps, which take it.
void WorkerService::ReapAbandonedSteps() {
  std::vector<std::pair<std::shared_ptr<ZmqRendezvous>, std::string>> reaped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = Clock::now();
    for (auto it = steps_.begin(); it != steps_.end();) {
      std::optional<std::string> why = WhyReap(it->first, it->second, now);
      if (!why) {
        ++it;
        continue;
      }
      reaped.emplace_back(std::move(it->second.rendezvous), std::move(*why));
      Forget(it->first);
      it = steps_.erase(it);
    }
  }
  for (auto& [rendezvous, why] : reaped)
    rendezvous->AbortFromPeer(Error(Code::kCancelled, StrCat("task ", task_prefix_, ": ", why)));
}

}  // namespace dflow::dist

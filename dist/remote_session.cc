#include "dist/remote_session.h"

#include <condition_variable>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "dist/partition.h"
#include "dist/step_stats_json.h"
#include "dist/zmq_rendezvous.h"
#include "graph/graph_io.h"
#include "graph/passes.h"

namespace dflow::dist {

using json = nlohmann::json;

namespace {

constexpr int64_t kControlTimeoutMs = 30000;  // GetStatus, RegisterGraph

Message Request(MessageType type, std::string text = {}, int64_t timeout_ms = 0) {
  Message request;
  request.type = type;
  request.text = std::move(text);
  request.deadline_ms = DeadlineIn(timeout_ms);
  return request;
}

json ReplyJson(const Message& reply, const std::string& what) {
  try {
    return json::parse(reply.text);
  } catch (const json::exception& e) {
    Fail(Code::kInternal, "unreadable ", what, " reply: ", e.what());
  }
}

// Unique across the processes that share a cluster: random, not a counter.
int64_t RandomStepId() {
  thread_local std::mt19937_64 random(std::random_device{}());
  return static_cast<int64_t>(random() >> 1);
}

// A task passes when a filter matches its CPU device (a filter names a job,
// a task or a whole device), or when there are no filters.
bool PassesDeviceFilters(const std::string& task_prefix, const std::vector<std::string>& filters) {
  DeviceName cpu = DeviceName::Parse(task_prefix + "/device:CPU:0");
  for (const std::string& filter : filters)
    if (DeviceName::Parse(filter).Matches(cpu)) return true;
  return filters.empty();
}

}  // namespace

RemoteSession::RemoteSession(std::shared_ptr<Graph> graph, const SessionOptions& options)
    : graph_(std::move(graph)), options_(options),
      pass_pool_(std::make_unique<ThreadPool>(1, "dflow-client")),
      pass_device_(NewCpuDevice(0, pass_pool_.get())) {
  Connect(options_.target);
}

RemoteSession::~RemoteSession() {
  for (Task& task : tasks_)
    if (!task.handles.empty())
      task.channel->Post(Request(MessageType::kDeregisterGraph, json{{"handles", task.handles}}.dump()));
}

// The target tells the cluster; every task then tells its devices and
// incarnation (a task that does not answer fails the session here).
void RemoteSession::Connect(const std::string& target) {
  ZmqEndpointOfTarget(target);  // validates the form
  std::string address = target.substr(std::string_view("zmq://").size());
  json status;
  {
    Channel first(target, address);
    status = ReplyJson(first.CallAndWait(Request(MessageType::kGetStatus, {}, kControlTimeoutMs)), "GetStatus");
  }
  ClusterSpec cluster = ClusterSpec::FromJson({{"cluster", status.at("cluster")}}, target);
  for (const auto& [job, addresses] : cluster.jobs()) {
    for (size_t i = 0; i < addresses.size(); ++i) {
      Task task;
      task.prefix = ClusterSpec::TaskPrefix({job, static_cast<int>(i)});
      if (!PassesDeviceFilters(task.prefix, options_.device_filters)) continue;
      task.channel = std::make_unique<Channel>(task.prefix, addresses[i]);
      json task_status = ReplyJson(
          task.channel->CallAndWait(Request(MessageType::kGetStatus, {}, kControlTimeoutMs)), "GetStatus");
      if (task_status.at("task").get<std::string>() != task.prefix)
        Fail(Code::kFailedPrecondition, "the server at ", addresses[i], " is task ",
             task_status.at("task").get<std::string>(), ", but the cluster says ", task.prefix);
      task.incarnation = task_status.at("incarnation").get<int64_t>();
      for (const json& device : task_status.at("devices")) devices_.push_back(device.get<std::string>());
      tasks_.push_back(std::move(task));
    }
  }
  if (tasks_.empty())
    Fail(Code::kInvalidArgument, "no task of the cluster at ", target, " passes the device filters ",
         json(options_.device_filters).dump());
}

size_t RemoteSession::TaskIndexOfDevice(const std::string& device) const {
  std::string prefix = TaskOfDevice(device);
  for (size_t t = 0; t < tasks_.size(); ++t)
    if (tasks_[t].prefix == prefix) return t;
  Fail(Code::kInternal, "device '", device, "' is on no task of the cluster");
}

int64_t RemoteSession::RegisterPartition(Task& task, const std::string& device, const Graph& graph) {
  json body = {{"device", device}, {"graph", ToJson(graph)}};
  Message reply = task.channel->CallAndWait(Request(MessageType::kRegisterGraph, body.dump(), kControlTimeoutMs));
  int64_t handle = ReplyJson(reply, "RegisterGraph").at("handle").get<int64_t>();
  task.handles.push_back(handle);
  return handle;
}

std::shared_ptr<RemoteSession::Executable> RemoteSession::Build(const FeedList& feeds,
                                                                const std::vector<TensorName>& fetches,
                                                                const std::vector<TensorName>& targets) {
  auto executable = std::make_shared<Executable>();
  executable->signature = RunSignature::Resolve(*graph_, feeds, fetches, targets);
  const RunSignature& signature = executable->signature;
  std::unique_ptr<Graph> graph = signature.PrepareGraph(*graph_, *pass_device_, options_.passes);
  PlacementOptions placement_options;
  placement_options.allow_soft_placement = options_.allow_soft_placement;
  Placement placement = Place(*graph, devices_, placement_options);
  PartitionOptions partition_options;
  for (const std::string& device : devices_)
    partition_options.incarnations[device] = tasks_[TaskIndexOfDevice(device)].incarnation;
  std::map<size_t, TaskPart> parts;  // by task
  for (DevicePartition& partition : Partition(*graph, placement, partition_options)) {
    size_t t = TaskIndexOfDevice(partition.device);
    TaskPart& part = parts[t];
    part.task = t;
    part.graphs.push_back(RegisterPartition(tasks_[t], partition.device, *partition.graph));
    for (Node* node : partition.graph->nodes())
      if (node->op() == "_Arg") part.args.push_back(static_cast<size_t>(node->attr<int64_t>("index")));
  }
  for (auto& [t, part] : parts) executable->parts.push_back(std::move(part));
  return executable;
}

std::shared_ptr<RemoteSession::Executable> RemoteSession::GetExecutable(
    const FeedList& feeds, const std::vector<TensorName>& fetches, const std::vector<TensorName>& targets) {
  std::string key = RunSignature::Key(feeds, fetches, targets);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  return cache_[key] = Build(feeds, fetches, targets);
}

std::vector<Tensor> RemoteSession::Run(const FeedList& feeds, const std::vector<TensorName>& fetches,
                                       const std::vector<TensorName>& targets, const RunOptions& options,
                                       RunMetadata* metadata) {
  std::shared_ptr<Executable> executable = GetExecutable(feeds, fetches, targets);
  std::vector<Tensor> args = executable->signature.CheckFeeds(feeds);
  std::vector<Tensor> retvals(fetches.size());
  auto start = std::chrono::steady_clock::now();
  RunMetadata trace;
  RunStep(*executable, args, retvals, options.trace && metadata ? &trace : nullptr);
  if (metadata) {
    *metadata = std::move(trace);
    metadata->step_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now() - start).count();
  }
  for (size_t i = 0; i < retvals.size(); ++i)
    if (!retvals[i].valid()) Fail(Code::kInternal, "fetch '", fetches[i].name, "' was not produced");
  return retvals;
}

// The replies of one step's RunStep calls, one per task.
struct RemoteSession::StepCalls {
  std::mutex mu;
  std::condition_variable done;
  size_t waiting = 0;
  std::optional<Error> first_error;
};

// Starts the step on every task at once. The first error aborts it on the
// others (their Recvs fail and they reply); every call ends by reply, error
// or heartbeat timeout, so the wait below always ends.
void RemoteSession::RunStep(const Executable& executable, const std::vector<Tensor>& args,
                            std::vector<Tensor>& retvals, RunMetadata* trace) {
  int64_t step_id = RandomStepId();
  auto calls = std::make_shared<StepCalls>();
  calls->waiting = executable.parts.size();
  for (const TaskPart& part : executable.parts) {
    json body = {{"step_id", step_id}, {"graphs", part.graphs}, {"num_args", args.size()},
                 {"num_retvals", retvals.size()}};
    if (trace) body["trace"] = true;
    Message request = Request(MessageType::kRunStep, body.dump());
    for (size_t index : part.args) request.tensors.push_back({StrCat("arg:", index), args[index]});
    const std::string& task = tasks_[part.task].prefix;
    tasks_[part.task].channel->Call(std::move(request), [calls, &retvals, trace, &task](std::optional<Error> error,
                                                                                       Message reply) {
      std::lock_guard<std::mutex> lock(calls->mu);
      if (trace && !error) {
        try {
          AppendStepStats(reply.text, task, *trace);
        } catch (const Error& e) {
          error = e;
        }
      }
      for (WireTensor& fetch : reply.tensors) {  // "ret:<i>"
        size_t index = fetch.name.starts_with("ret:") ? std::strtoull(fetch.name.c_str() + 4, nullptr, 10)
                                                      : retvals.size();
        if (index < retvals.size()) retvals[index] = std::move(fetch.value);
      }
      if (error && !calls->first_error) calls->first_error = std::move(error);
      --calls->waiting;
      calls->done.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(calls->mu);
  calls->done.wait(lock, [&] { return calls->waiting == 0 || calls->first_error; });
  if (calls->first_error) {
    Error origin = *calls->first_error;
    lock.unlock();
    AbortStep(executable, step_id, origin);
    lock.lock();
    calls->done.wait(lock, [&] { return calls->waiting == 0; });
  }
  for (const TaskPart& part : executable.parts)
    tasks_[part.task].channel->Post(Request(MessageType::kCleanupStep, json{{"step_id", step_id}}.dump()));
  if (calls->first_error) throw *calls->first_error;
}

void RemoteSession::AbortStep(const Executable& executable, int64_t step_id, const Error& error) {
  json body = {{"step_id", step_id}, {"code", static_cast<int>(error.code())}, {"message", error.message()}};
  for (const TaskPart& part : executable.parts)
    tasks_[part.task].channel->Post(Request(MessageType::kAbortStep, body.dump()));
}

namespace {

[[maybe_unused]] const bool registered = [] {
  RegisterRemoteSessionFactory([](std::shared_ptr<Graph> graph, const SessionOptions& options) {
    return std::make_unique<RemoteSession>(std::move(graph), options);
  });
  return true;
}();

}  // namespace
}  // namespace dflow::dist

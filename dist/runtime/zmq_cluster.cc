#include "dist/runtime/zmq_cluster.h"

#include <algorithm>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "dist/cluster.h"
#include "dist/runtime/step_stats_json.h"
#include "dist/runtime/zmq_rendezvous.h"
#include "graph/graph_io.h"
#include "graph/json.h"

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
    return ParseJson(reply.text, what + " reply");
  } catch (const Error& e) {
    Fail(Code::kInternal, "unreadable ", what, " reply: ", e.message());
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

// The `index` attrs of a graph's nodes of op `op` (_Arg, _Retval).
std::vector<size_t> IndicesOf(const Graph& graph, const std::string& op) {
  std::vector<size_t> indices;
  for (const Node* node : graph.nodes())
    if (node->op() == op) indices.push_back(static_cast<size_t>(node->attr<int64_t>("index")));
  return indices;
}

// The client's side of a cluster step. Tensors travel between the tasks, not
// through here; what the client does is abort: the first error (a task's
// reply, or a dead task) is posted to every task the step runs on, whose
// Recvs then fail. When the step is over, the tasks are told to forget it.
class ClientRendezvous final : public Rendezvous {
 public:
  ClientRendezvous(int64_t step_id, std::vector<ZmqCluster::Task*> tasks)
      : step_id_(step_id), tasks_(std::move(tasks)) {}
  ~ClientRendezvous() override {
    for (ZmqCluster::Task* task : tasks_)
      task->channel->Post(Request(MessageType::kCleanupStep, json{{"step_id", step_id_}}.dump()));
  }

  void Send(const RendezvousKey& key, Tensor) override { NoTensorsHere(key); }
  void RecvAsync(const RendezvousKey& key, RecvDone) override { NoTensorsHere(key); }
  void StartAbort(const Error& error) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (abort_error_) return;
      abort_error_ = error;
    }
    json body = {{"step_id", step_id_}, {"code", static_cast<int>(error.code())}, {"message", error.message()}};
    for (ZmqCluster::Task* task : tasks_) task->channel->Post(Request(MessageType::kAbortStep, body.dump()));
  }
  std::optional<Error> abort_error() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return abort_error_;
  }

 private:
  [[noreturn]] static void NoTensorsHere(const RendezvousKey& key) {
    Fail(Code::kInternal, "tensor ", key.ToString(), " was sent to the client of a cluster session; "
         "Send/Recv pairs join the cluster's tasks");
  }

  int64_t step_id_;
  std::vector<ZmqCluster::Task*> tasks_;
  mutable std::mutex mu_;
  std::optional<Error> abort_error_;
};

// A partition registered on a task: each step is one RunStep call carrying
// the feeds it reads; the reply brings its fetches (and, when tracing, its
// node stats).
class TaskPartition final : public PartitionRunner {
 public:
  TaskPartition(ZmqCluster::Task& task, int64_t handle, const Graph& graph)
      : task_(task), handle_(handle), args_(IndicesOf(graph, "_Arg")) {
    for (size_t index : IndicesOf(graph, "_Retval")) retvals_.insert(index);
  }

  void RunAsync(const ExecutorStep& step, const RunOptions& options, RunMetadata* metadata, Done done,
                bool) override {
    bool trace = options.trace && metadata;
    Message request;
    try {
      request = StepRequest(step, trace);
    } catch (const Error& e) {
      return done(e);
    }
    std::vector<Tensor>* retvals = step.retvals;
    auto on_fetch_ready = options.on_fetch_ready;
    int64_t sent = SteadyClockNs();
    task_.channel->Call(std::move(request), [this, retvals, metadata, trace, sent, on_fetch_ready,
                                             done = std::move(done)](std::optional<Error> error, Message reply) {
      int64_t replied = SteadyClockNs();
      if (!error) {
        try {
          TakeReply(reply, *retvals, trace ? metadata : nullptr, on_fetch_ready);
        } catch (const Error& e) {
          error = e;
        }
      }
      if (metadata) {
        metadata->step_ns = replied - sent;
        // The task's step started after the request left and before the
        // reply came: a clock estimate outside that is bounded by it.
        if (trace) metadata->start_clock_ns = std::clamp(metadata->start_clock_ns, sent, replied);
      }
      done(std::move(error));
    });
  }

 private:
  Message StepRequest(const ExecutorStep& step, bool trace) const {
    json body = {{"step_id", step.step_id}, {"graphs", {handle_}}, {"num_args", step.args->size()},
                 {"num_retvals", step.retvals->size()}};
    if (trace) body["trace"] = true;
    Message request = Request(MessageType::kRunStep, body.dump());
    for (size_t index : args_) {
      if (index >= step.args->size()) Fail(Code::kInternal, "feed arg:", index, " of task ", task_.prefix, " is missing");
      request.tensors.push_back({StrCat("arg:", index), (*step.args)[index]});
    }
    return request;
  }

  // Only the fetches this partition produces are taken: a reply naming
  // another would race with the partition that owns it.
  void TakeReply(Message& reply, std::vector<Tensor>& retvals, RunMetadata* metadata,
                 const std::function<void(size_t, const Tensor&)>& on_fetch_ready) const {
    if (metadata) {
      int64_t task_start = AppendStepStats(reply.text, task_.prefix, *metadata);
      if (task_start != 0) metadata->start_clock_ns = task_start - task_.clock_offset_ns;
    }
    for (WireTensor& fetch : reply.tensors) {  // "ret:<i>"
      size_t index = fetch.name.starts_with("ret:") ? std::strtoull(fetch.name.c_str() + 4, nullptr, 10)
                                                    : retvals.size();
      if (!retvals_.count(index) || index >= retvals.size())
        Fail(Code::kInternal, "task ", task_.prefix, " replied with '", fetch.name,
             "', which its partition does not fetch");
      retvals[index] = std::move(fetch.value);
      if (on_fetch_ready) on_fetch_ready(index, retvals[index]);
    }
  }

  ZmqCluster::Task& task_;
  int64_t handle_;
  std::vector<size_t> args_;
  std::set<size_t> retvals_;
};

}  // namespace

ZmqCluster::ZmqCluster(const SessionOptions& options)
    : pass_pool_(std::make_unique<ThreadPool>(1, "dflow-client")),
      pass_device_(NewCpuDevice(0, pass_pool_.get())) {
  Connect(options.target, options.device_filters);
}

ZmqCluster::~ZmqCluster() {
  for (Task& task : tasks_)
    if (!task.handles.empty())
      task.channel->Post(Request(MessageType::kDeregisterGraph, json{{"handles", task.handles}}.dump()));
}

// The target tells the cluster; every task then tells its devices and
// incarnation (a task that does not answer fails the session here).
void ZmqCluster::Connect(const std::string& target, const std::vector<std::string>& device_filters) {
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
      if (!PassesDeviceFilters(task.prefix, device_filters)) continue;
      task.channel = std::make_unique<Channel>(task.prefix, addresses[i]);
      json task_status = ReplyJson(
          task.channel->CallAndWait(Request(MessageType::kGetStatus, {}, kControlTimeoutMs)), "GetStatus");
      if (task_status.at("task").get<std::string>() != task.prefix)
        Fail(Code::kFailedPrecondition, "the server at ", addresses[i], " is task ",
             task_status.at("task").get<std::string>(), ", but the cluster says ", task.prefix);
      task.incarnation = task_status.at("incarnation").get<int64_t>();
      for (const json& device : task_status.at("devices")) devices_.push_back(device.get<std::string>());
      MeasureClock(task);
      tasks_.push_back(std::move(task));
    }
  }
  if (tasks_.empty())
    Fail(Code::kInvalidArgument, "no task of the cluster at ", target, " passes the device filters ",
         json(device_filters).dump());
}

// The task's clock offset as NTP estimates it: a GetStatus sent at t0 and
// answered at t1 (client clock) carries the task's clock c, read somewhere in
// between, so c - (t0 + t1) / 2 is the offset give or take (t1 - t0) / 2. The
// quickest of a few round trips has the smallest error.
void ZmqCluster::MeasureClock(Task& task) {
  constexpr int kRoundTrips = 5;
  for (int i = 0; i < kRoundTrips; ++i) {
    int64_t t0 = SteadyClockNs();
    Message reply = task.channel->CallAndWait(Request(MessageType::kGetStatus, {}, kControlTimeoutMs));
    int64_t t1 = SteadyClockNs();
    int64_t clock = ReplyJson(reply, "GetStatus").value("clock_ns", int64_t{0});
    if (clock == 0) return;  // the task does not tell its clock: its traces keep the client's times
    int64_t error = (t1 - t0) / 2;
    if (i > 0 && error >= task.clock_error_ns) continue;
    task.clock_error_ns = error;
    task.clock_offset_ns = clock - t0 - error;
  }
}

size_t ZmqCluster::TaskIndexOf(const std::string& device) const {
  std::string prefix = TaskOfDevice(device);
  for (size_t t = 0; t < tasks_.size(); ++t)
    if (tasks_[t].prefix == prefix) return t;
  Fail(Code::kInternal, "device '", device, "' is on no task of the cluster");
}

int64_t ZmqCluster::Incarnation(const std::string& device) const {
  return tasks_[TaskIndexOf(device)].incarnation;
}

std::unique_ptr<PartitionRunner> ZmqCluster::Load(const std::string& device, std::shared_ptr<Graph> graph) {
  Task& task = tasks_[TaskIndexOf(device)];
  json body = {{"device", device}, {"graph", ToJson(*graph)}};
  Message reply = task.channel->CallAndWait(Request(MessageType::kRegisterGraph, body.dump(), kControlTimeoutMs));
  int64_t handle = ReplyJson(reply, "RegisterGraph").at("handle").get<int64_t>();
  task.handles.push_back(handle);
  return std::make_unique<TaskPartition>(task, handle, *graph);
}

// The step's tasks, each once, in the order of their partitions.
ClusterStep ZmqCluster::NewStep(const std::vector<std::string>& partition_devices) {
  std::vector<Task*> tasks;
  for (const std::string& device : partition_devices) {
    Task* task = &tasks_[TaskIndexOf(device)];
    if (std::find(tasks.begin(), tasks.end(), task) == tasks.end()) tasks.push_back(task);
  }
  ClusterStep step;
  step.id = RandomStepId();
  step.rendezvous = std::make_unique<ClientRendezvous>(step.id, std::move(tasks));
  return step;
}

namespace {

[[maybe_unused]] const bool zmq_cluster_registered = [] {
  RegisterClusterFactory("zmq", [](const SessionOptions& options) { return std::make_unique<ZmqCluster>(options); });
  return true;
}();

}  // namespace
}  // namespace dflow::dist

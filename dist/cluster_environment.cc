#include "dist/cluster_environment.h"

#include <charconv>
#include <cstdlib>
#include <iostream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>

#include "dist/coordinator.h"
#include "dist/transport/curve.h"
#include "graph/graph_io.h"
#include "graph/json.h"
#include "graph/status.h"

namespace dflow::dist {
namespace {

using Json = nlohmann::ordered_json;

// Every variable DetectLauncher reads.
constexpr const char* kVariables[] = {
    "DFLOW_CLUSTER", "TF_CONFIG", "DFLOW_COORDINATOR", "DFLOW_NUM_PS",
    // torchrun, PyTorchJob
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_USE_AGENT_STORE",
    // Slurm
    "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_JOB_ID",
    "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST",
    // Open MPI (PMIx names the job)
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "PMIX_NAMESPACE",
    // MPICH / Intel MPI (Hydra)
    "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS", "PMI_FD", "PMI_PORT"};

const std::string* Find(const Environment& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

int Integer(const Environment& env, const std::string& name) {
  const std::string& text = *Find(env, name);
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    Fail(Code::kInvalidArgument, name, " must be an integer, got '", CutForMessage(text), "'");
  return value;
}

// `first` and `second` come together: one without the other is partial.
void RequireBoth(const Environment& env, const std::string& first, const std::string& second, const std::string& who) {
  if (Find(env, first) && !Find(env, second))
    Fail(Code::kInvalidArgument, first, " is set but ", second, " is not: the ", who,
         " variables are partial (both or neither)");
}

bool IsLoopback(std::string_view host) {
  return host == "localhost" || host == "::1" || host.substr(0, 4) == "127.";
}

// A port in 20000..29999 from a job's id: the same for every rank of the
// job, most likely different for two jobs on one machine.
int PortFromJobId(std::string_view id) {
  return 20000 + static_cast<int>(std::hash<std::string_view>{}(id) % 10000);
}

struct RankVariables {
  const char* who;  // "torchrun", ...
  const char* rank;
  const char* size;
  const char* local_size;  // may be absent
};

// The coordinator: DFLOW_COORDINATOR, MASTER_ADDR:MASTER_PORT, the Slurm
// step's first node, or 127.0.0.1 when every rank runs here.
void ChooseCoordinator(const Environment& env, const RankVariables& vars, LauncherCluster& out) {
  if (const std::string* given = Find(env, "DFLOW_COORDINATOR")) {
    ParseHostPort(*given, "DFLOW_COORDINATOR");
    out.coordinator = *given;
    out.coordinator_source = "DFLOW_COORDINATOR";
    return;
  }
  RequireBoth(env, "MASTER_ADDR", "MASTER_PORT", "coordinator");
  RequireBoth(env, "MASTER_PORT", "MASTER_ADDR", "coordinator");
  if (Find(env, "MASTER_ADDR")) {
    int port = Integer(env, "MASTER_PORT");
    // torchrun's agent may serve its own store on MASTER_PORT: meet next to it.
    const std::string* agent = Find(env, "TORCHELASTIC_USE_AGENT_STORE");
    if (agent && (*agent == "True" || *agent == "true" || *agent == "1")) ++port;
    out.coordinator = StrCat(*Find(env, "MASTER_ADDR"), ":", port);
    ParseHostPort(out.coordinator, "MASTER_ADDR:MASTER_PORT");
    out.coordinator_source = port == Integer(env, "MASTER_PORT") ? "MASTER_ADDR:MASTER_PORT"
                                                                   : "MASTER_ADDR:MASTER_PORT+1 (torchrun's agent store)";
    return;
  }
  if (std::string_view(vars.who) == "Slurm") {
    const std::string* list = Find(env, "SLURM_STEP_NODELIST");
    if (!list) list = Find(env, "SLURM_JOB_NODELIST");
    if (!list) list = Find(env, "SLURM_NODELIST");
    if (list && Find(env, "SLURM_JOB_ID")) {
      out.coordinator = StrCat(ExpandHostlist(*list).front(), ":", PortFromJobId(*Find(env, "SLURM_JOB_ID")));
      out.coordinator_source = "the first node of the Slurm node list, port from SLURM_JOB_ID";
      return;
    }
  }
  const std::string* job = Find(env, "PMIX_NAMESPACE");
  if (!job) job = Find(env, "SLURM_JOB_ID");
  const bool all_here = vars.local_size && Find(env, vars.local_size) && Integer(env, vars.local_size) == out.size;
  if (all_here && job) {
    out.coordinator = StrCat("127.0.0.1:", PortFromJobId(*job));
    out.coordinator_source = "this machine (every rank is local), port from the job's id";
    return;
  }
  Fail(Code::kInvalidArgument, vars.who, " gives this process rank ", out.rank, " of ", out.size,
       " but no place for the ranks to meet: set DFLOW_COORDINATOR=host:port (a free port on rank 0's "
       "machine), e.g. mpirun -x DFLOW_COORDINATOR=node1:29500, or MASTER_ADDR and MASTER_PORT");
}

std::optional<LauncherCluster> RankLauncher(const Environment& env) {
  static const RankVariables kLaunchers[] = {
      {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"},
      {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", nullptr},
      {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"},
      {"MPICH/PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"}};
  RequireBoth(env, "RANK", "WORLD_SIZE", "torchrun");
  RequireBoth(env, "WORLD_SIZE", "RANK", "torchrun");
  RequireBoth(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI");
  RequireBoth(env, "PMI_RANK", "PMI_SIZE", "MPICH/PMI");
  // SLURM_PROCID is set in a batch script too; only a task of srun is a rank.
  const bool srun = Find(env, "SLURM_STEP_ID") || Find(env, "SLURM_STEPID");
  if (srun) RequireBoth(env, "SLURM_PROCID", "SLURM_NTASKS", "Slurm");
  for (const RankVariables& vars : kLaunchers) {
    if (!Find(env, vars.rank) || (std::string_view(vars.who) == "Slurm" && !srun)) continue;
    LauncherCluster out;
    out.source = StrCat(vars.rank, "/", vars.size, " (", vars.who, ")");
    out.rank = Integer(env, vars.rank);
    out.size = Integer(env, vars.size);
    if (out.size < 1 || out.rank < 0 || out.rank >= out.size)
      Fail(Code::kInvalidArgument, vars.rank, "=", out.rank, " and ", vars.size, "=", out.size,
           " conflict: a rank is 0..size-1");
    if (Find(env, "DFLOW_NUM_PS")) out.num_ps = Integer(env, "DFLOW_NUM_PS");
    if (out.num_ps < 0 || out.num_ps >= out.size)
      Fail(Code::kInvalidArgument, "DFLOW_NUM_PS=", out.num_ps, " conflicts with ", vars.size, "=", out.size,
           ": the parameter servers are the first ranks, and at least one rank must be a worker");
    ChooseCoordinator(env, vars, out);
    return out;
  }
  return std::nullopt;
}

// TF_CONFIG's jobs, dense lists or (sparseCluster) index -> address maps
// that must name every index.
std::vector<std::string> TfJobTasks(const std::string& job, const Json& tasks) {
  std::string where = StrCat("TF_CONFIG: job '", job, "'");
  if (tasks.is_array()) {
    std::vector<std::string> list;
    for (const Json& t : tasks) {
      if (!t.is_string()) Fail(Code::kInvalidArgument, where, " lists ", DescribeJson(t), ", not \"host:port\"");
      list.push_back(t.get<std::string>());
    }
    return list;
  }
  if (!tasks.is_object())
    Fail(Code::kInvalidArgument, where, " must be a list of \"host:port\" (or, sparse, an object of them by index)");
  std::map<int, std::string> by_index;
  for (const auto& [key, address] : tasks.items()) {
    int index = -1;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), index);
    if (ec != std::errc() || end != key.data() + key.size() || index < 0 || index > 65535 || !address.is_string())
      Fail(Code::kInvalidArgument, where, ": entry \"", CutForMessage(key), "\" is not index: \"host:port\"");
    by_index[index] = address.get<std::string>();
  }
  std::vector<std::string> list;
  for (const auto& [index, address] : by_index) {
    if (index != static_cast<int>(list.size()))
      Fail(Code::kInvalidArgument, where, " does not name task ", list.size(),
           ": a sparse cluster that leaves tasks out cannot train with dflow, whose ring and parameter "
           "servers need every task's address");
    list.push_back(address);
  }
  return list;
}

void LogOnce(const std::string& line) {
  static std::mutex mu;
  static std::string last;
  std::lock_guard lock(mu);
  if (line == last) return;
  last = line;
  std::cerr << line << std::endl;
}

std::string Describe(const ClusterSpec& spec) {
  std::string jobs;
  for (const auto& [job, tasks] : spec.jobs()) jobs += StrCat(jobs.empty() ? "" : ", ", tasks.size(), " ", job);
  std::string self = spec.self() ? ClusterSpec::TaskPrefix(*spec.self()) : std::string("no task");
  return StrCat(self, " of a cluster of ", jobs);
}

}  // namespace

Environment ProcessEnvironment() {
  Environment env;
  for (const char* name : kVariables)
    if (const char* value = std::getenv(name); value && *value) env[name] = value;
  return env;
}

std::optional<LauncherCluster> DetectLauncher(const Environment& env) {
  LauncherCluster document;
  if (const std::string* text = Find(env, "DFLOW_CLUSTER")) {
    document.source = "DFLOW_CLUSTER";
    document.spec = ClusterSpec::Parse(*text, "DFLOW_CLUSTER");
    return document;
  }
  if (const std::string* text = Find(env, "TF_CONFIG")) {
    document.source = "TF_CONFIG";
    document.spec = ClusterFromTfConfig(*text);
    return document;
  }
  return RankLauncher(env);
}

ClusterSpec ClusterFromTfConfig(std::string_view text) {
  Json doc = ParseJson<Json>(text, "TF_CONFIG");
  if (!doc.is_object()) Fail(Code::kInvalidArgument, "TF_CONFIG must be a JSON object, got ", DescribeJson(doc));
  for (const auto& [key, value] : doc.items())
    if (key != "cluster" && key != "sparseCluster" && key != "task" && key != "environment" && key != "rpc_layer")
      Fail(Code::kInvalidArgument, "TF_CONFIG: unknown field \"", CutForMessage(key),
           "\" (expected cluster or sparseCluster, task, environment, rpc_layer)");
  if (doc.contains("cluster") == doc.contains("sparseCluster"))
    Fail(Code::kInvalidArgument, "TF_CONFIG needs exactly one of \"cluster\" and \"sparseCluster\"");
  const Json& cluster = doc.contains("cluster") ? doc["cluster"] : doc["sparseCluster"];
  if (!cluster.is_object()) Fail(Code::kInvalidArgument, "TF_CONFIG's cluster must be an object of jobs");
  // TensorFlow's chief (or its older name, master) is dflow's worker 0.
  std::vector<std::string> chief;
  Json jobs = Json::object();
  for (const auto& [job, tasks] : cluster.items()) {
    if (job == "evaluator") continue;  // not a member of the training cluster in TensorFlow either
    std::vector<std::string> list = TfJobTasks(job, tasks);
    if (job == "chief" || job == "master") {
      if (list.size() != 1 || !chief.empty())
        Fail(Code::kInvalidArgument, "TF_CONFIG: the cluster has ", chief.size() + list.size(),
             " chief tasks; TensorFlow allows one");
      chief = list;
    } else {
      jobs[job] = list;
    }
  }
  if (!chief.empty()) {
    Json workers = Json::array({chief.front()});
    if (jobs.contains("worker"))
      for (const Json& w : jobs["worker"]) workers.push_back(w);
    jobs["worker"] = workers;
  }
  Json out = {{"cluster", jobs}};
  if (doc.contains("task")) {
    const Json& task = doc["task"];
    if (!task.is_object() || !task.contains("type") || !task["type"].is_string() || !task.contains("index") ||
        !task["index"].is_number_integer())
      Fail(Code::kInvalidArgument, "TF_CONFIG's task must be {\"type\": JOB, \"index\": N}, got ",
           DescribeJson(task));
    std::string type = task["type"].get<std::string>();
    int64_t index = task["index"].get<int64_t>();
    if (type == "evaluator")
      Fail(Code::kInvalidArgument, "TF_CONFIG names this task an evaluator: dflow's trainers have no evaluator ",
           "task (evaluate a checkpoint with the app's eval command instead)");
    if (type == "chief" || type == "master") {
      if (index != 0) Fail(Code::kInvalidArgument, "TF_CONFIG: chief index ", index, " (there is one chief, 0)");
      type = "worker";
    } else if (type == "worker" && !chief.empty()) {
      index += 1;  // after the chief
    }
    out["task"] = {{"type", type}, {"index", index}};
  }
  return ClusterSpec::FromJson(out, "TF_CONFIG");
}

std::vector<std::string> ExpandHostlist(std::string_view hostlist) {
  constexpr size_t kMaxHosts = 1 << 16;
  std::vector<std::string> hosts;
  // Expands the first bracket group of `name`, then the rest, recursively.
  std::function<void(const std::string&)> expand = [&](const std::string& name) {
    size_t open = name.find('[');
    if (open == std::string::npos) {
      if (name.find(']') != std::string::npos)
        Fail(Code::kInvalidArgument, "hostlist '", CutForMessage(hostlist), "': unbalanced ']'");
      if (hosts.size() >= kMaxHosts)
        Fail(Code::kInvalidArgument, "hostlist '", CutForMessage(hostlist), "' names over ", kMaxHosts, " hosts");
      hosts.push_back(name);
      return;
    }
    size_t close = name.find(']', open);
    if (close == std::string::npos)
      Fail(Code::kInvalidArgument, "hostlist '", CutForMessage(hostlist), "': unbalanced '['");
    std::string prefix = name.substr(0, open), rest = name.substr(close + 1);
    std::string ranges = name.substr(open + 1, close - open - 1);
    size_t start = 0;
    while (start <= ranges.size()) {
      size_t comma = ranges.find(',', start);
      std::string range = ranges.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      size_t dash = range.find('-');
      std::string lo_text = range.substr(0, dash), hi_text = dash == std::string::npos ? lo_text : range.substr(dash + 1);
      long lo = -1, hi = -1;
      auto number = [&](const std::string& text, long& value) {
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        return !text.empty() && ec == std::errc() && end == text.data() + text.size() && value >= 0;
      };
      if (!number(lo_text, lo) || !number(hi_text, hi) || lo > hi || hi - lo >= static_cast<long>(kMaxHosts))
        Fail(Code::kInvalidArgument, "hostlist '", CutForMessage(hostlist), "': bad range '", CutForMessage(range),
             "' (expected N or LO-HI)");
      for (long k = lo; k <= hi; ++k) {
        std::string digits = std::to_string(k);
        if (digits.size() < lo_text.size()) digits.insert(0, lo_text.size() - digits.size(), '0');
        expand(prefix + digits + rest);
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  };
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= hostlist.size(); ++i) {
    if (i < hostlist.size() && hostlist[i] == '[') ++depth;
    if (i < hostlist.size() && hostlist[i] == ']') --depth;
    if (i == hostlist.size() || (hostlist[i] == ',' && depth == 0)) {
      std::string entry(hostlist.substr(start, i - start));
      if (entry.empty()) Fail(Code::kInvalidArgument, "hostlist '", CutForMessage(hostlist), "' has an empty entry");
      expand(entry);
      start = i + 1;
    }
  }
  return hosts;
}

ClusterSpec ClusterOfRanks(const std::vector<std::string>& addresses, int rank, int num_ps) {
  Json jobs = Json::object();
  for (int r = 0; r < static_cast<int>(addresses.size()); ++r) jobs[r < num_ps ? "ps" : "worker"].push_back(addresses[r]);
  Json task = rank < num_ps ? Json{{"type", "ps"}, {"index", rank}} : Json{{"type", "worker"}, {"index", rank - num_ps}};
  return ClusterSpec::FromJson(Json{{"cluster", jobs}, {"task", task}}, "the ranks' addresses");
}

ClusterSpec MeetAtCoordinator(const LauncherCluster& launcher, std::chrono::milliseconds timeout) {
  auto [host, port] = ParseHostPort(launcher.coordinator, "the coordinator");
  std::string own = StrCat(IsLoopback(host) ? std::string("127.0.0.1") : LocalAddressToward(host, port), ":",
                           FreePort());
  std::vector<std::string> addresses =
      launcher.rank == 0 ? GatherAddresses(launcher.coordinator, launcher.size, own, timeout)
                         : SendAddress(launcher.coordinator, launcher.rank, launcher.size, own, timeout);
  return ClusterOfRanks(addresses, launcher.rank, launcher.num_ps);
}

std::optional<ClusterSpec> ResolveCluster(const Environment& env) {
  // The ranks meet once per process: later calls with the same variables
  // get the same cluster.
  static std::mutex mu;
  static std::map<Environment, ClusterSpec> met;
  std::optional<LauncherCluster> launcher = DetectLauncher(env);
  if (!launcher) return std::nullopt;
  if (launcher->spec) {
    if (!launcher->spec->curve_keys().empty()) SetProcessTransportKeys(launcher->spec->curve_keys());
    LogOnce(StrCat("dflow: ", Describe(*launcher->spec), " (from ", launcher->source, ")"));
    return launcher->spec;
  }
  std::lock_guard lock(mu);
  auto it = met.find(env);
  if (it == met.end()) {
    it = met.emplace(env, MeetAtCoordinator(*launcher)).first;
    LogOnce(StrCat("dflow: ", Describe(it->second), " (from ", launcher->source, ", rank ", launcher->rank, " of ",
                   launcher->size, "; the ranks met at ", launcher->coordinator, ", from ",
                   launcher->coordinator_source, ")"));
  }
  return it->second;
}

std::optional<ClusterSpec> ClusterSpec::FromEnvironment() { return ResolveCluster(ProcessEnvironment()); }

}  // namespace dflow::dist

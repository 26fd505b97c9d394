// The cluster: which jobs exist, the "host:port" of each of their tasks, and
// which task this process is. Read from a JSON file or from the environment
// variable DFLOW_CLUSTER (the same document, like TensorFlow's TF_CONFIG), so
// any process manager (a shell loop, Slurm, Kubernetes, mpirun) can start us:
//
//   {"cluster": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"],
//                "ps": ["127.0.0.1:2224"]},
//    "task": {"type": "worker", "index": 1},
//    "gpus_per_task": 0}
//
// "task", "gpus_per_task" and "curve_keys" (the folder of the cluster's
// CURVE keys: dist/transport/curve.h) are optional.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dflow::dist {

// One task of one job: /job:<job>/replica:0/task:<index>.
struct TaskId {
  std::string job;
  int index = 0;
  bool operator==(const TaskId& other) const = default;
};

class ClusterSpec {
 public:
  // Reads and validates the document; errors name `source` and the field.
  static ClusterSpec FromJson(const nlohmann::ordered_json& doc, std::string_view source);
  static ClusterSpec Parse(std::string_view text, std::string_view source);
  static ClusterSpec Load(const std::string& path);
  // From the launcher's variables (DFLOW_CLUSTER, TF_CONFIG, torchrun's,
  // Slurm's, MPI's: dist/cluster_environment.h); nullopt when none is set.
  static std::optional<ClusterSpec> FromEnvironment();

  const std::map<std::string, std::vector<std::string>>& jobs() const { return jobs_; }
  int num_tasks(const std::string& job) const;  // 0 for an unknown job
  // "host:port" of a task; throws kNotFound naming the job and the range.
  const std::string& Address(const TaskId& task) const;
  // This process's task, when the document says.
  const std::optional<TaskId>& self() const { return self_; }
  int gpus_per_task() const { return gpus_per_task_; }
  // The CURVE keys' folder, or "" (the document names none).
  const std::string& curve_keys() const { return curve_keys_; }

  // Every device of the cluster, jobs in name order then tasks in order:
  // "/job:ps/replica:0/task:0/device:CPU:0", then its GPUs if any.
  std::vector<std::string> DeviceNames() const;
  // "/job:worker/replica:0/task:1"
  static std::string TaskPrefix(const TaskId& task);

 private:
  std::map<std::string, std::vector<std::string>> jobs_;
  std::optional<TaskId> self_;
  int gpus_per_task_ = 0;
  std::string curve_keys_;
};

// Splits "host:port" ("[::1]:2222" for IPv6); throws naming `where` when the
// host is empty or the port is not in 1..65535.
std::pair<std::string, int> ParseHostPort(std::string_view address, std::string_view where);

}  // namespace dflow::dist

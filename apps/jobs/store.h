// The job service's state in one SQLite file (`dflow jobs serve --db FILE`):
// datasets, jobs and nodes, as BK.Synapse's job service keeps them.
// Metrics, logs and snapshots stay in each job's run directory on the data
// root, where the apps write them. Thread-safe: one connection, one lock.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

struct sqlite3;

namespace dflow::jobs {

using Json = nlohmann::json;

struct Dataset {
  int64_t id = 0;
  std::string name, app, path;  // path: absolute, inside the data root
  double created = 0;           // Unix seconds
};

// What a job trains and how (the submit form's fields).
struct JobSpec {
  std::string name, app, model;  // app: count or detect
  int64_t dataset_id = 0;
  int64_t eval_dataset_id = 0;  // evaluated on after training; 0: none
  int64_t steps = 0, batch = 0, checkpoint_every = 0;
  int workers = 1, ps = 0;
  std::string strategy = "ring";  // ring or ps
  std::string backend = "local";  // local, mpirun or slurm
  std::vector<std::string> nodes;  // mpirun's hosts (empty: this machine)
};

// The spec as the database and the API write it.
Json SpecJson(const JobSpec& spec);

enum class JobStatus { kQueued, kRunning, kSucceeded, kFailed, kStopped };
std::string StatusName(JobStatus status);

struct Job {
  int64_t id = 0;
  JobSpec spec;
  JobStatus status = JobStatus::kQueued;
  std::string reason;   // why it failed or stopped
  std::string run_dir;  // absolute
  int64_t pid = 0;      // the launching process while running
  int base_port = 0;
  double created = 0, started = 0, finished = 0;
};

struct Node {
  std::string name;
  Json info;  // cores, memory_bytes, load, gpus
  double last_seen = 0;
};

class Store {
 public:
  // Opens (creating) the database file; kInvalidArgument names a file that
  // is not a dflow jobs database.
  explicit Store(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  int64_t AddDataset(const Dataset& dataset);  // kAlreadyExists for a taken name
  std::vector<Dataset> Datasets();
  std::optional<Dataset> FindDataset(int64_t id);

  int64_t AddJob(const JobSpec& spec, const std::string& runs_dir);  // sets run_dir = runs_dir/<id>-<name>
  std::vector<Job> Jobs();
  std::optional<Job> FindJob(int64_t id);
  void SetRunning(int64_t id, int64_t pid, int base_port);
  void SetFinished(int64_t id, JobStatus status, const std::string& reason);
  void Requeue(int64_t id);  // resume: queued again, reason cleared

  void Heartbeat(const Node& node);
  std::vector<Node> Nodes();

 private:
  void Exec(const std::string& sql);
  std::mutex mu_;
  sqlite3* db_ = nullptr;
};

double NowSeconds();

}  // namespace dflow::jobs

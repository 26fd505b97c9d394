#include "apps/jobs/store.h"

#include <sqlite3.h>

#include <chrono>

#include "graph/status.h"

namespace dflow::jobs {
namespace {

constexpr const char* kSchema = R"(
CREATE TABLE IF NOT EXISTS datasets (
  id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, app TEXT NOT NULL, path TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
  id INTEGER PRIMARY KEY, spec TEXT NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',
  run_dir TEXT NOT NULL DEFAULT '', pid INTEGER NOT NULL DEFAULT 0, base_port INTEGER NOT NULL DEFAULT 0,
  created REAL NOT NULL, started REAL NOT NULL DEFAULT 0, finished REAL NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS nodes (name TEXT PRIMARY KEY, info TEXT NOT NULL, last_seen REAL NOT NULL);
)";

// One prepared statement; Bind* take 1-based positions.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      Fail(Code::kInternal, "jobs database: cannot prepare '", sql, "': ", sqlite3_errmsg(db));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement& Bind(int i, const std::string& text) {
    sqlite3_bind_text(stmt_, i, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& Bind(int i, int64_t value) {
    sqlite3_bind_int64(stmt_, i, value);
    return *this;
  }
  Statement& Bind(int i, double value) {
    sqlite3_bind_double(stmt_, i, value);
    return *this;
  }
  // True while a row is there.
  bool Step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    if (rc == SQLITE_CONSTRAINT) Fail(Code::kAlreadyExists, "jobs database: ", sqlite3_errmsg(db_));
    Fail(Code::kInternal, "jobs database: ", sqlite3_errmsg(db_));
  }
  std::string Text(int column) const {
    const unsigned char* text = sqlite3_column_text(stmt_, column);
    return text ? reinterpret_cast<const char*>(text) : "";
  }
  int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
  double Real(int column) const { return sqlite3_column_double(stmt_, column); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

JobStatus ParseStatus(const std::string& name) {
  for (JobStatus s : {JobStatus::kQueued, JobStatus::kRunning, JobStatus::kSucceeded, JobStatus::kFailed,
                      JobStatus::kStopped})
    if (StatusName(s) == name) return s;
  Fail(Code::kInternal, "jobs database: unknown job status '", name, "'");
}

}  // namespace

Json SpecJson(const JobSpec& s) {
  return {{"name", s.name},       {"app", s.app},         {"model", s.model},     {"dataset_id", s.dataset_id}, {"eval_dataset_id", s.eval_dataset_id},
          {"steps", s.steps},     {"batch", s.batch},     {"workers", s.workers}, {"ps", s.ps},
          {"strategy", s.strategy}, {"backend", s.backend}, {"nodes", s.nodes},
          {"checkpoint_every", s.checkpoint_every}};
}

namespace {

JobSpec SpecFromJson(const Json& j) {
  JobSpec s;
  s.name = j.at("name");
  s.app = j.at("app");
  s.model = j.at("model");
  s.dataset_id = j.at("dataset_id");
  s.eval_dataset_id = j.value("eval_dataset_id", int64_t{0});
  s.steps = j.at("steps");
  s.batch = j.at("batch");
  s.workers = j.at("workers");
  s.ps = j.at("ps");
  s.strategy = j.at("strategy");
  s.backend = j.at("backend");
  s.nodes = j.at("nodes").get<std::vector<std::string>>();
  s.checkpoint_every = j.at("checkpoint_every");
  return s;
}

constexpr const char* kJobColumns = "id, spec, status, reason, run_dir, pid, base_port, created, started, finished";

Job JobFromRow(const Statement& row) {
  Job job;
  job.id = row.Int(0);
  job.spec = SpecFromJson(Json::parse(row.Text(1)));
  job.status = ParseStatus(row.Text(2));
  job.reason = row.Text(3);
  job.run_dir = row.Text(4);
  job.pid = row.Int(5);
  job.base_port = static_cast<int>(row.Int(6));
  job.created = row.Real(7);
  job.started = row.Real(8);
  job.finished = row.Real(9);
  return job;
}

}  // namespace

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string StatusName(JobStatus status) {
  switch (status) {
    case JobStatus::kQueued: return "queued";
    case JobStatus::kRunning: return "running";
    case JobStatus::kSucceeded: return "succeeded";
    case JobStatus::kFailed: return "failed";
    case JobStatus::kStopped: return "stopped";
  }
  return "unknown";
}

Store::Store(const std::string& path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    Fail(Code::kInvalidArgument, "cannot open the jobs database ", path, ": ", why);
  }
  sqlite3_busy_timeout(db_, 5000);
  try {
    Exec(kSchema);
  } catch (const Error& e) {
    sqlite3_close(db_);
    Fail(Code::kInvalidArgument, path, " is not a dflow jobs database: ", e.message());
  }
}

Store::~Store() { sqlite3_close(db_); }

void Store::Exec(const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    Fail(Code::kInternal, "jobs database: ", message);
  }
}

int64_t Store::AddDataset(const Dataset& d) {
  std::lock_guard lock(mu_);
  Statement insert(db_, "INSERT INTO datasets (name, app, path, created) VALUES (?, ?, ?, ?)");
  try {
    insert.Bind(1, d.name).Bind(2, d.app).Bind(3, d.path).Bind(4, NowSeconds()).Step();
  } catch (const Error& e) {
    if (e.code() == Code::kAlreadyExists) Fail(Code::kAlreadyExists, "a dataset named '", d.name, "' exists");
    throw;
  }
  return sqlite3_last_insert_rowid(db_);
}

std::vector<Dataset> Store::Datasets() {
  std::lock_guard lock(mu_);
  Statement select(db_, "SELECT id, name, app, path, created FROM datasets ORDER BY id");
  std::vector<Dataset> out;
  while (select.Step()) out.push_back({select.Int(0), select.Text(1), select.Text(2), select.Text(3), select.Real(4)});
  return out;
}

std::optional<Dataset> Store::FindDataset(int64_t id) {
  for (Dataset& d : Datasets())
    if (d.id == id) return d;
  return std::nullopt;
}

int64_t Store::AddJob(const JobSpec& spec, const std::string& runs_dir) {
  std::lock_guard lock(mu_);
  Statement insert(db_, "INSERT INTO jobs (spec, status, created) VALUES (?, 'queued', ?)");
  insert.Bind(1, SpecJson(spec).dump()).Bind(2, NowSeconds()).Step();
  int64_t id = sqlite3_last_insert_rowid(db_);
  Statement set_dir(db_, "UPDATE jobs SET run_dir = ? WHERE id = ?");
  set_dir.Bind(1, StrCat(runs_dir, "/", id, "-", spec.name)).Bind(2, id).Step();
  return id;
}

std::vector<Job> Store::Jobs() {
  std::lock_guard lock(mu_);
  Statement select(db_, StrCat("SELECT ", kJobColumns, " FROM jobs ORDER BY id").c_str());
  std::vector<Job> out;
  while (select.Step()) out.push_back(JobFromRow(select));
  return out;
}

std::optional<Job> Store::FindJob(int64_t id) {
  std::lock_guard lock(mu_);
  Statement select(db_, StrCat("SELECT ", kJobColumns, " FROM jobs WHERE id = ?").c_str());
  select.Bind(1, id);
  if (!select.Step()) return std::nullopt;
  return JobFromRow(select);
}

void Store::SetRunning(int64_t id, int64_t pid, int base_port) {
  std::lock_guard lock(mu_);
  Statement update(db_, "UPDATE jobs SET status = 'running', pid = ?, base_port = ?, started = ?, reason = '' "
                        "WHERE id = ?");
  update.Bind(1, pid).Bind(2, static_cast<int64_t>(base_port)).Bind(3, NowSeconds()).Bind(4, id).Step();
}

void Store::SetFinished(int64_t id, JobStatus status, const std::string& reason) {
  std::lock_guard lock(mu_);
  Statement update(db_, "UPDATE jobs SET status = ?, reason = ?, pid = 0, finished = ? WHERE id = ?");
  update.Bind(1, StatusName(status)).Bind(2, reason).Bind(3, NowSeconds()).Bind(4, id).Step();
}

void Store::Requeue(int64_t id) {
  std::lock_guard lock(mu_);
  Statement update(db_, "UPDATE jobs SET status = 'queued', reason = '', finished = 0 WHERE id = ?");
  update.Bind(1, id).Step();
}

void Store::Heartbeat(const Node& node) {
  std::lock_guard lock(mu_);
  Statement upsert(db_, "INSERT INTO nodes (name, info, last_seen) VALUES (?, ?, ?) "
                        "ON CONFLICT(name) DO UPDATE SET info = excluded.info, last_seen = excluded.last_seen");
  upsert.Bind(1, node.name).Bind(2, node.info.dump()).Bind(3, NowSeconds()).Step();
}

std::vector<Node> Store::Nodes() {
  std::lock_guard lock(mu_);
  Statement select(db_, "SELECT name, info, last_seen FROM nodes ORDER BY name");
  std::vector<Node> out;
  while (select.Step()) out.push_back({select.Text(0), Json::parse(select.Text(1)), select.Real(2)});
  return out;
}

}  // namespace dflow::jobs

#include "apps/jobs/service.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <httplib.h>
#include <map>
#include <thread>

#include "apps/common/run_metrics.h"
#include "apps/jobs/upload.h"
#include "apps/jobs/validate.h"
#include "graph/json.h"
#include "graph/status.h"

namespace dflow::jobs {
namespace {

namespace fs = std::filesystem;
using httplib::Request;
using httplib::Response;

constexpr size_t kMaxLogChunk = size_t{1} << 20;
constexpr size_t kMaxBody = size_t{1} << 20;      // a JSON request
constexpr size_t kMaxUpload = size_t{4} << 30;   // an uploaded dataset archive

void Reply(Response& res, const Json& body, int status = 200) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

int HttpStatus(Code code) {
  switch (code) {
    case Code::kInvalidArgument:
    case Code::kOutOfRange: return 400;
    case Code::kNotFound: return 404;
    case Code::kAlreadyExists:
    case Code::kFailedPrecondition: return 409;
    default: return 500;
  }
}

int64_t Id(const Request& req) { return std::stoll(req.matches[1]); }

Json DatasetJson(const Dataset& d) {
  return {{"id", d.id}, {"name", d.name}, {"app", d.app}, {"path", d.path}, {"created", d.created}};
}

// The job's spec and how it stands.
Json JobJson(const Job& job) {
  Json out = SpecJson(job.spec);
  out.update({{"id", job.id},
              {"status", StatusName(job.status)},
              {"reason", job.reason},
              {"run_dir", job.run_dir},
              {"created", job.created},
              {"started", job.started},
              {"finished", job.finished}});
  return out;
}

// The job's per-step metrics, in step order.
Json Metrics(const std::string& run_dir) {
  Json out = Json::array();
  for (auto& [step, entry] : apps::ReadRunMetrics(run_dir)) out.push_back(std::move(entry));
  return out;
}

Json Snapshots(const std::string& run_dir) {
  Json out = Json::array();
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(run_dir + "/checkpoints", error)) {
    std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".safetensors") continue;
    out.push_back({{"file", name}, {"bytes", fs::file_size(entry.path(), error)}});
  }
  std::sort(out.begin(), out.end(), [](const Json& a, const Json& b) { return a["file"] < b["file"]; });
  return out;
}

// Bytes [offset, offset + kMaxLogChunk) of the log and where it ended.
std::pair<std::string, int64_t> ReadLog(const std::string& run_dir, int64_t offset) {
  std::ifstream in(run_dir + "/log.txt", std::ios::binary);
  if (!in) return {"", offset};
  in.seekg(0, std::ios::end);
  int64_t size = in.tellg();
  if (offset >= size) return {"", size};
  in.seekg(offset);
  std::string text(static_cast<size_t>(std::min<int64_t>(size - offset, kMaxLogChunk)), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  return {text, offset + static_cast<int64_t>(text.size())};
}

// One event; each line of `data` is a "data:" line (a final newline is the
// event's end, not an empty line).
std::string ServerSentEvent(const std::string& event, std::string data) {
  if (!data.empty() && data.back() == '\n') data.pop_back();
  std::string out = "event: " + event + "\n";
  size_t start = 0;
  while (start <= data.size()) {
    size_t end = data.find('\n', start);
    out += "data: " + data.substr(start, end == std::string::npos ? std::string::npos : end - start) + "\n";
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out + "\n";
}

}  // namespace

std::string LoadOrCreateToken(const std::string& path) {
  if (fs::exists(path)) {
    std::ifstream in(path);
    std::string token;
    std::getline(in, token);
    DFLOW_REQUIRE(token.size() >= 32, path, " holds no token (delete it to make a new one)");
    return token;
  }
  std::ifstream random("/dev/urandom", std::ios::binary);
  unsigned char bytes[32];
  random.read(reinterpret_cast<char*>(bytes), sizeof bytes);
  DFLOW_REQUIRE(random.gcount() == sizeof bytes, "cannot read /dev/urandom for a token");
  std::string token;
  for (unsigned char b : bytes) token += StrCat("0123456789abcdef"[b >> 4], "0123456789abcdef"[b & 15]);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  DFLOW_REQUIRE(fd >= 0, "cannot create the token file ", path, ": ", std::strerror(errno));
  std::string line = token + "\n";
  bool written = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  DFLOW_REQUIRE(written, "cannot write the token file ", path);
  return token;
}

Service::Service(Store& store, Runner& runner, ServiceOptions options)
    : server_(std::make_unique<httplib::Server>()), store_(store), runner_(runner), options_(std::move(options)) {
  server_->set_payload_max_length(kMaxUpload);
  server_->set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const Error& e) {
      Reply(res, {{"error", e.message()}}, HttpStatus(e.code()));
    } catch (const std::exception& e) {
      Reply(res, {{"error", e.what()}}, 500);
    }
  });
  // httplib's own answers (no such route, a malformed request) as JSON too.
  server_->set_error_handler([](const Request& req, Response& res) {
    if (!res.body.empty()) return;
    std::string what = res.status == 404   ? StrCat("no ", req.method, " ", CutForMessage(req.path), " here")
                       : res.status == 413 ? StrCat("the request body is too large (a JSON body, sent as ",
                                                    "Content-Type: application/json, takes up to ", kMaxBody,
                                                    " bytes; an archive up to ", kMaxUpload, ")")
                                           : StrCat("HTTP ", res.status);
    res.set_content(Json{{"error", what}}.dump(), "application/json");
  });
  server_->set_pre_routing_handler([this](const Request& req, Response& res) {
    if (req.path.rfind("/api/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    std::string given = req.get_header_value("Authorization");
    const bool header_ok = given == "Bearer " + options_.token;
    const bool query_ok = req.has_param("token") && req.get_param_value("token") == options_.token;
    if (header_ok || query_ok) return httplib::Server::HandlerResponse::Unhandled;
    Reply(res, {{"error", "missing or wrong token: send 'Authorization: Bearer TOKEN' (the token file of "
                          "dflow jobs serve)"}},
          401);
    return httplib::Server::HandlerResponse::Handled;
  });
  Routes();
}

Service::~Service() = default;

int Service::Bind(const std::string& host, int port) {
  if (port == 0) {
    int bound = server_->bind_to_any_port(host);
    DFLOW_REQUIRE(bound > 0, "dflow jobs serve: cannot listen on ", host);
    return bound;
  }
  if (!server_->bind_to_port(host, port))
    Fail(Code::kUnavailable, "dflow jobs serve: cannot listen on ", host, ":", port, " (in use?)");
  return port;
}

void Service::Serve() { server_->listen_after_bind(); }
void Service::Stop() { server_->stop(); }

void Service::Routes() {
  httplib::Server& s = *server_;
  s.Get("/", [](const Request&, Response& res) { res.set_content(PageHtml(), "text/html; charset=utf-8"); });
  // Debian's packaged front-end libraries, nothing from the internet.
  s.Get("/static/vue.js", [](const Request&, Response& res) {
    res.set_content(ReadStatic("/usr/share/javascript/vue/vue.min.js"), "text/javascript");
  });
  s.Get("/static/chart.js", [](const Request&, Response& res) {
    res.set_content(ReadStatic("/usr/share/javascript/chart.js/chart.min.js"), "text/javascript");
  });

  s.Get("/api/models", [](const Request&, Response& res) { Reply(res, ModelsJson()); });

  s.Get("/api/datasets", [this](const Request&, Response& res) {
    Json out = Json::array();
    for (const Dataset& d : store_.Datasets()) out.push_back(DatasetJson(d));
    Reply(res, out);
  });
  s.Post("/api/datasets", [this](const Request& req, Response& res) {
    Dataset d = DatasetFromRequest(ParseBody(req.body), options_.data_root);
    d.id = store_.AddDataset(d);
    Reply(res, DatasetJson(*store_.FindDataset(d.id)), 201);
  });

  // An archive as the body, streamed to a file, then unpacked under datasets/NAME.
  s.Post("/api/datasets/upload", [this](const Request& req, Response& res, const httplib::ContentReader& content) {
    Json fields = {{"name", req.get_param_value("name")}, {"app", req.get_param_value("app")}, {"path", "."}};
    Dataset d = DatasetFromRequest(fields, options_.data_root);  // checks the name and the app
    const std::string destination = options_.data_root + "/datasets/" + d.name;
    if (fs::exists(destination)) Fail(Code::kAlreadyExists, "datasets/", d.name, " exists in the data root");
    fs::create_directories(options_.data_root + "/datasets");
    const std::string archive = destination + ".upload";
    {
      std::ofstream out(archive, std::ios::binary | std::ios::trunc);
      content([&](const char* data, size_t length) {
        out.write(data, static_cast<std::streamsize>(length));
        return out.good();
      });
      DFLOW_REQUIRE(out.good(), "cannot store the upload in ", archive);
    }
    try {
      d.path = UnpackDataset(archive, destination);
    } catch (...) {
      fs::remove(archive);
      throw;
    }
    fs::remove(archive);
    d.id = store_.AddDataset(d);
    Reply(res, DatasetJson(*store_.FindDataset(d.id)), 201);
  });

  s.Get("/api/jobs", [this](const Request&, Response& res) {
    Json out = Json::array();
    for (const Job& job : store_.Jobs()) out.push_back(JobJson(job));
    Reply(res, out);
  });
  s.Post("/api/jobs", [this](const Request& req, Response& res) {
    JobSpec spec = JobSpecFromRequest(ParseBody(req.body));
    std::optional<Dataset> dataset = store_.FindDataset(spec.dataset_id);
    if (!dataset) Fail(Code::kNotFound, "no dataset ", spec.dataset_id);
    if (dataset->app != spec.app)
      Fail(Code::kInvalidArgument, "dataset '", dataset->name, "' is for the ", dataset->app, " app, not ", spec.app);
    if (spec.eval_dataset_id != 0) {
      std::optional<Dataset> held_out = store_.FindDataset(spec.eval_dataset_id);
      if (!held_out) Fail(Code::kNotFound, "no evaluation dataset ", spec.eval_dataset_id);
      if (held_out->app != spec.app)
        Fail(Code::kInvalidArgument, "evaluation dataset '", held_out->name, "' is for the ", held_out->app, " app");
    }
    int64_t id = store_.AddJob(spec, options_.data_root + "/runs");
    try {
      runner_.Start(id, false);
    } catch (const Error& e) {
      Reply(res, {{"error", e.message()}, {"job", JobJson(*store_.FindJob(id))}}, HttpStatus(e.code()));
      return;
    }
    Reply(res, JobJson(*store_.FindJob(id)), 201);
  });
  s.Get(R"(/api/jobs/(\d+))", [this](const Request& req, Response& res) {
    Job job = FindJobOrFail(Id(req));
    Json out = JobJson(job);
    std::ifstream evaluation(job.run_dir + "/eval.json");
    Json eval = Json::parse(evaluation, nullptr, false);
    if (eval.is_object()) out["eval"] = eval;
    if (std::optional<Dataset> dataset = store_.FindDataset(job.spec.dataset_id))
      out["command"] = runner_.Command(job, *dataset, false);
    Reply(res, out);
  });
  s.Get(R"(/api/jobs/(\d+)/log)", [this](const Request& req, Response& res) {
    Job job = FindJobOrFail(Id(req));
    int64_t offset = req.has_param("offset") ? ParseOffset(req.get_param_value("offset")) : 0;
    auto [text, next] = ReadLog(job.run_dir, offset);
    res.set_header("X-Next-Offset", std::to_string(next));
    res.set_content(text, "text/plain; charset=utf-8");
  });
  s.Get(R"(/api/jobs/(\d+)/events)", [this](const Request& req, Response& res) {
    const int64_t id = FindJobOrFail(Id(req)).id;
    auto offset = std::make_shared<int64_t>(0);
    auto last_status = std::make_shared<std::string>();
    res.set_chunked_content_provider("text/event-stream", [this, id, offset, last_status](size_t,
                                                                                          httplib::DataSink& sink) {
      std::optional<Job> job = store_.FindJob(id);
      if (!job) return false;
      auto [text, next] = ReadLog(job->run_dir, *offset);
      *offset = next;
      std::string events = text.empty() ? std::string() : ServerSentEvent("log", text);
      const std::string status = StatusName(job->status);
      if (status != *last_status) {
        *last_status = status;
        events += ServerSentEvent("status", JobJson(*job).dump());
      }
      if (!events.empty() && !sink.write(events.data(), events.size())) return false;
      const bool over = job->status != JobStatus::kRunning && job->status != JobStatus::kQueued;
      if (over && text.empty()) {
        sink.done();
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      return true;
    });
  });
  s.Get(R"(/api/jobs/(\d+)/metrics)", [this](const Request& req, Response& res) {
    Reply(res, Metrics(FindJobOrFail(Id(req)).run_dir));
  });
  s.Get(R"(/api/jobs/(\d+)/snapshots)", [this](const Request& req, Response& res) {
    Reply(res, Snapshots(FindJobOrFail(Id(req)).run_dir));
  });
  s.Get(R"(/api/jobs/(\d+)/snapshots/([A-Za-z0-9_.-]+))", [this](const Request& req, Response& res) {
    Job job = FindJobOrFail(Id(req));
    const std::string file = req.matches[2];
    bool listed = false;
    for (const Json& snapshot : Snapshots(job.run_dir)) listed = listed || snapshot["file"] == file;
    if (!listed) Fail(Code::kNotFound, "job ", job.id, " has no snapshot '", file, "'");
    res.set_header("Content-Disposition", "attachment; filename=\"" + file + "\"");
    res.set_content(ReadStatic(job.run_dir + "/checkpoints/" + file), "application/octet-stream");
  });
  s.Post(R"(/api/jobs/(\d+)/stop)", [this](const Request& req, Response& res) {
    Job job = FindJobOrFail(Id(req));
    if (!runner_.IsRunning(job.id))
      Fail(Code::kFailedPrecondition, "job ", job.id, " is ", StatusName(job.status), ", not running");
    runner_.Stop(job.id);
    Reply(res, {{"id", job.id}, {"stopping", true}}, 202);
  });
  s.Post(R"(/api/jobs/(\d+)/resume)", [this](const Request& req, Response& res) {
    Job job = FindJobOrFail(Id(req));
    if (job.status != JobStatus::kStopped && job.status != JobStatus::kFailed)
      Fail(Code::kFailedPrecondition, "job ", job.id, " is ", StatusName(job.status),
           "; only a stopped or failed job resumes");
    if (Snapshots(job.run_dir).empty())
      Fail(Code::kFailedPrecondition, "job ", job.id, " has no snapshot to resume from");
    store_.Requeue(job.id);
    runner_.Start(job.id, true);
    Reply(res, JobJson(*store_.FindJob(job.id)), 202);
  });

  s.Get("/api/nodes", [this](const Request&, Response& res) {
    Json out = Json::array();
    const double now = NowSeconds();
    for (const Node& node : store_.Nodes())
      out.push_back({{"name", node.name},
                     {"info", node.info},
                     {"last_seen", node.last_seen},
                     {"status", now - node.last_seen > options_.node_lost_seconds ? "lost" : "live"}});
    Reply(res, out);
  });
  s.Post("/api/nodes", [this](const Request& req, Response& res) {
    store_.Heartbeat(NodeFromRequest(ParseBody(req.body)));
    Reply(res, {{"ok", true}});
  });
}

Job Service::FindJobOrFail(int64_t id) {
  std::optional<Job> job = store_.FindJob(id);
  if (!job) Fail(Code::kNotFound, "no job ", id);
  return *job;
}

}  // namespace dflow::jobs

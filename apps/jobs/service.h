// `dflow jobs serve`: the job service's REST API (JSON over HTTP) and its web
// page, over a Store and a Runner. Every /api/ call needs the bearer token
// (the Authorization header, or ?token= where a browser cannot set headers:
// EventSource, downloads); errors are JSON {"error": message} with the HTTP
// status that fits. Paths a client names stay inside the data root.
//
//   GET  /api/models                   the apps and their models
//   GET  /api/datasets                 POST /api/datasets {name, app, path}
//   POST /api/datasets/upload?name=N&app=A   an archive as the body (upload.h)
//   GET  /api/jobs                     POST /api/jobs {name, app, model, dataset_id, steps, batch,
//                                           workers, strategy, ps, checkpoint_every, backend, nodes}
//   GET  /api/jobs/ID                  the job, its command and status
//   GET  /api/jobs/ID/log?offset=N     its log from byte N (X-Next-Offset says where to go on)
//   GET  /api/jobs/ID/events           the log and status as server-sent events, until it ends
//   GET  /api/jobs/ID/metrics          its per-step metrics (RUN/metrics.jsonl)
//   GET  /api/jobs/ID/snapshots        the chief's checkpoints; GET .../snapshots/FILE downloads one
//   POST /api/jobs/ID/stop             POST /api/jobs/ID/resume
//   GET  /api/nodes                    POST /api/nodes (a node's heartbeat)
#pragma once

#include <memory>
#include <string>

#include "apps/jobs/runner.h"
#include "apps/jobs/store.h"

namespace httplib {
class Server;
}

namespace dflow::jobs {

struct ServiceOptions {
  std::string data_root;  // datasets, runs/ (the jobs' run directories)
  std::string token;
  double node_lost_seconds = 10;  // a node whose heartbeat is older is "lost"
};

class Service {
 public:
  Service(Store& store, Runner& runner, ServiceOptions options);
  ~Service();
  // Listens on host:port (port 0: a free one) and returns the port; Serve
  // then blocks until Stop.
  int Bind(const std::string& host, int port);
  void Serve();
  void Stop();

 private:
  void Routes();
  Job FindJobOrFail(int64_t id);
  std::unique_ptr<httplib::Server> server_;
  Store& store_;
  Runner& runner_;
  ServiceOptions options_;
};

// The bearer token in `path`, made (32 random bytes, hex, mode 0600) on first use.
std::string LoadOrCreateToken(const std::string& path);

// The web page and its script (apps/jobs/page.cc).
const std::string& PageHtml();

}  // namespace dflow::jobs

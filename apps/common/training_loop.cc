// See training_loop.h.
#include "apps/common/training_loop.h"

#include <algorithm>
#include <atomic>
#include <csignal>

#include "apps/common/workers.h"

namespace dflow::apps {
namespace {

std::atomic<bool> g_stop_signalled{false};
void RecordStop(int) { g_stop_signalled = true; }

}  // namespace

TrainingWorkers FindTrainingWorkers(const DataParallelSettings& settings, const std::string& device) {
  TrainingWorkers w;
  w.elastic = ElasticTrainingWorker(settings, device);
  if (w.elastic) {
    w.index = ProvisionalWorkerIndex(*w.elastic);
    w.count = std::max(w.index + 1, settings.workers);
  } else {
    w.cluster = TrainingCluster(settings, device);
    w.index = WorkerIndex(w.cluster);
    w.count = NumWorkers(w.cluster);
  }
  return w;
}

void StopOnSignals() {
  std::signal(SIGINT, RecordStop);
  std::signal(SIGTERM, RecordStop);
}

bool StopSignalled() { return g_stop_signalled.load(); }

bool StopRequested(dist::DataParallelStrategy* strategy) {
  return strategy ? strategy->AnyWorker(StopSignalled()) : StopSignalled();
}

}  // namespace dflow::apps

// The data-parallel options of an app's `train` (--workers, --strategy, ...),
// kept apart from apps/common/workers.h so that a run's settings need not
// see the cluster and CLI headers.
#pragma once

#include <string>

namespace dflow::apps {

// Not recorded in a run's config.json: a run may be resumed with other resources.
struct DataParallelSettings {
  int workers = 1;       // > 1 without DFLOW_CLUSTER: start them with dflow launch
  std::string strategy;  // empty: DFLOW_STRATEGY, else ring
  int ps = 0;            // strategy ps: parameter-server tasks; 0: not given (1)
  std::string ps_mode;   // strategy ps: sync or async; empty: sync
  std::string codec;     // strategy ring: none, fp16 or 1bit; empty: none
  int base_port = 0;     // dflow launch --base-port; 0: its default
  std::string split;     // --split (apps/common/model_split.h); empty: each worker holds the whole network
  bool elastic = false;  // ring workers may die or join (dist/training/elastic.h)
  int min_workers = 0;   // --elastic: the job stops below this many; 0: 1
  int max_workers = 0;   // --elastic: at most this many; 0: --workers
};

}  // namespace dflow::apps

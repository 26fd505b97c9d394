// Runs one function per rank on its own thread over an in-process network,
// each with its own Communicator, and collects what each rank threw.
#pragma once

#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "dist/collectives/communicator.h"
#include "dist/collectives/in_process_link.h"

namespace dflow::testing {

struct RankOutcome {
  std::optional<Error> error;
};

// `absent` ranks never start (a dead or missing process).
inline std::vector<RankOutcome> RunRanks(
    int num_ranks, const std::function<void(dist::Communicator&)>& body,
    dist::CollectiveOptions options = {}, std::vector<int> absent = {}) {
  dist::InProcessNetwork network(num_ranks);
  std::vector<RankOutcome> outcomes(num_ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < num_ranks; ++r) {
    if (std::find(absent.begin(), absent.end(), r) != absent.end()) continue;
    threads.emplace_back([&, r] {
      dist::Communicator comm(network.endpoint(r), options);
      try {
        body(comm);
      } catch (const Error& e) {
        outcomes[r].error = e;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return outcomes;
}

}  // namespace dflow::testing

// PointToPoint between threads of one process: one mailbox per rank, a queue
// per (sender, tag). For tests of the collectives and for simulating N
// workers in one process.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "dist/collectives/point_to_point.h"

namespace dflow::dist {

class InProcessNetwork {
 public:
  explicit InProcessNetwork(int num_ranks);
  ~InProcessNetwork();

  int num_ranks() const { return static_cast<int>(endpoints_.size()); }
  // Rank r's end of the network; owned by the network.
  PointToPoint& endpoint(int rank);
  // Bytes rank r has sent so far (every tag).
  size_t bytes_sent(int rank) const;

 private:
  class Endpoint;
  struct Mailbox {
    std::mutex mu;
    std::condition_variable arrived;
    std::map<std::pair<int, std::string>, std::deque<Bytes>> queues;
  };
  void Deliver(int from, int to, const std::string& tag, Bytes bytes);
  Bytes Take(int from, int to, const std::string& tag, Deadline deadline);

  std::vector<std::unique_ptr<Mailbox>> mailboxes_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::unique_ptr<std::atomic<size_t>[]> bytes_sent_;
};

}  // namespace dflow::dist

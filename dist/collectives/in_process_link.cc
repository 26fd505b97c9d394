#include "dist/collectives/in_process_link.h"

#include "graph/status.h"

namespace dflow::dist {

class InProcessNetwork::Endpoint final : public PointToPoint {
 public:
  Endpoint(InProcessNetwork* network, int rank) : network_(network), rank_(rank) {}
  int rank() const override { return rank_; }
  int num_ranks() const override { return network_->num_ranks(); }
  void Send(int to, const std::string& tag, Bytes bytes) override {
    network_->Deliver(rank_, to, tag, std::move(bytes));
  }
  Bytes Recv(int from, const std::string& tag, Deadline deadline) override {
    return network_->Take(from, rank_, tag, deadline);
  }

 private:
  InProcessNetwork* network_;
  int rank_;
};

InProcessNetwork::InProcessNetwork(int num_ranks) {
  DFLOW_REQUIRE(num_ranks >= 1, "InProcessNetwork: need at least one rank, got ", num_ranks);
  bytes_sent_ = std::make_unique<std::atomic<size_t>[]>(num_ranks);
  for (int r = 0; r < num_ranks; ++r) {
    mailboxes_.push_back(std::make_unique<Mailbox>());
    endpoints_.push_back(std::make_unique<Endpoint>(this, r));
    bytes_sent_[r] = 0;
  }
}

InProcessNetwork::~InProcessNetwork() = default;

PointToPoint& InProcessNetwork::endpoint(int rank) {
  DFLOW_REQUIRE(rank >= 0 && rank < num_ranks(), "InProcessNetwork: rank ", rank,
                " is out of range 0..", num_ranks() - 1);
  return *endpoints_[rank];
}

size_t InProcessNetwork::bytes_sent(int rank) const { return bytes_sent_[rank].load(); }

void InProcessNetwork::Deliver(int from, int to, const std::string& tag, Bytes bytes) {
  DFLOW_REQUIRE(to >= 0 && to < num_ranks(), "rank ", from, " sends '", tag, "' to rank ", to,
                ", which is out of range 0..", num_ranks() - 1);
  bytes_sent_[from] += bytes.size();
  Mailbox& box = *mailboxes_[to];
  {
    std::lock_guard lock(box.mu);
    box.queues[{from, tag}].push_back(std::move(bytes));
  }
  box.arrived.notify_all();
}

Bytes InProcessNetwork::Take(int from, int to, const std::string& tag, Deadline deadline) {
  DFLOW_REQUIRE(from >= 0 && from < num_ranks(), "rank ", to, " receives '", tag,
                "' from rank ", from, ", which is out of range 0..", num_ranks() - 1);
  Mailbox& box = *mailboxes_[to];
  std::unique_lock lock(box.mu);
  auto key = std::make_pair(from, tag);
  bool ready = box.arrived.wait_until(lock, deadline, [&] {
    auto it = box.queues.find(key);
    return it != box.queues.end() && !it->second.empty();
  });
  if (!ready)
    Fail(Code::kUnavailable, "rank ", to, " timed out waiting for '", tag, "' from rank ", from);
  auto it = box.queues.find(key);
  Bytes bytes = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) box.queues.erase(it);
  return bytes;
}

}  // namespace dflow::dist

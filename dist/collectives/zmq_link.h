// PointToPoint between processes over ZeroMQ, so that the collectives
// (communicator.h) run across machines. Each rank serves a MessageServer at
// its own address whose handler fills a mailbox (a queue per (sender, tag)),
// and reaches every other rank through a Channel; a message is one
// kLinkMessage request, acknowledged by an empty reply nobody waits for.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dist/collectives/point_to_point.h"
#include "graph/status.h"

namespace dflow::dist {

class Channel;
class MessageServer;

class ZmqLink final : public PointToPoint {
 public:
  // Binds `bind_address` ("127.0.0.1:0": any free port; see address()).
  ZmqLink(int rank, int num_ranks, const std::string& bind_address);
  ~ZmqLink() override;
  ZmqLink(const ZmqLink&) = delete;
  ZmqLink& operator=(const ZmqLink&) = delete;

  // "host:port" this rank serves at, the port resolved.
  const std::string& address() const { return address_; }
  // Opens a channel to every other rank; addresses[r] is rank r's address().
  void Connect(const std::vector<std::string>& addresses);

  int rank() const override { return rank_; }
  int num_ranks() const override { return num_ranks_; }
  // Never waits for the receiver. A delivery that failed earlier (the peer
  // refused it or stopped answering) is thrown here or by the next Recv.
  void Send(int to, const std::string& tag, Bytes bytes) override;
  // Throws kUnavailable naming both ranks and the tag on timeout, and as
  // soon as rank `from` stops answering heartbeats.
  Bytes Recv(int from, const std::string& tag, Deadline deadline) override;

 private:
  void Deliver(int from, const std::string& tag, Bytes bytes);
  void RecordFailure(const Error& error);
  void ThrowIfFailed();
  void CheckRank(int peer, const char* verb, const std::string& tag) const;

  const int rank_;
  const int num_ranks_;
  std::string address_;

  std::mutex mu_;  // guards queues_ and failure_
  std::condition_variable changed_;
  std::map<std::pair<int, std::string>, std::deque<Bytes>> queues_;
  std::optional<Error> failure_;

  // Declared last: stopped first, while the mailbox they fill still exists.
  std::vector<std::unique_ptr<Channel>> channels_;  // [rank]; null for self
  std::unique_ptr<MessageServer> server_;
};

}  // namespace dflow::dist

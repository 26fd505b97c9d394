// PointToPoint between processes over ZeroMQ, so that the collectives
// (communicator.h) run across machines. Each rank serves a MessageServer at
// its own address whose handler fills a mailbox (a queue per (sender, tag)),
// and reaches every other rank through a Channel; a message is one
// kLinkMessage request, acknowledged by an empty reply that Flush waits for.
// Shutdown ends a run so that no rank's exit cuts off another's messages.
//
// Start-up: ranks may start seconds apart (a launcher, Slurm), so Connect
// sends every peer a hello (rank, number of ranks, fingerprint) and waits up
// to `startup_timeout` for each to answer; both sides check that the hellos
// agree. Only then do the heartbeats that detect a dead peer start.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dist/collectives/point_to_point.h"
#include "graph/status.h"

namespace dflow::dist {

class Channel;
class ClusterSpec;
class MessageServer;
struct Message;

struct ZmqLinkOptions {
  // How long Connect waits for every peer to come up and answer its hello.
  std::chrono::milliseconds startup_timeout{60000};
  // Equal on every rank of one run, or Connect fails (e.g. the cluster's
  // addresses plus a run id): a rank of another run cannot join by mistake.
  std::string fingerprint{};
  // How ranks are named in errors, e.g. "worker:2"; empty: "rank 2".
  std::vector<std::string> rank_names{};
};

class ZmqLink final : public PointToPoint {
 public:
  // Binds `bind_address` ("127.0.0.1:0": any free port; see address()).
  ZmqLink(int rank, int num_ranks, const std::string& bind_address, ZmqLinkOptions options = {});
  // Flushes what is still unacknowledged (at most 2 s), then closes.
  ~ZmqLink() override;
  ZmqLink(const ZmqLink&) = delete;
  ZmqLink& operator=(const ZmqLink&) = delete;

  // The link of this process's task in `cluster`'s "worker" job: rank = the
  // task index, bound at its cluster address, peers named "worker:k", the
  // fingerprint made of the workers' addresses and `options.fingerprint`.
  // Connected (Connect below) before it is returned.
  static std::unique_ptr<ZmqLink> ForCluster(const ClusterSpec& cluster, ZmqLinkOptions options = {});

  // "host:port" this rank serves at, the port resolved.
  const std::string& address() const { return address_; }
  // Says hello to every other rank (addresses[r] is rank r's address()) and
  // waits until each has answered, retrying while peers start; throws
  // kUnavailable naming the ranks that did not answer within the start-up
  // timeout, kFailedPrecondition naming both ranks when hellos disagree.
  void Connect(const std::vector<std::string>& addresses);

  int rank() const override { return rank_; }
  int num_ranks() const override { return num_ranks_; }
  // Never waits for the receiver. A delivery that failed earlier (the peer
  // refused it or stopped answering) is thrown here or by the next Recv.
  void Send(int to, const std::string& tag, Bytes bytes) override;
  // Throws kUnavailable naming both ranks and the tag on timeout, and as
  // soon as any peer stops answering heartbeats (naming that peer): among
  // ranks of one job, a collective cannot finish without every rank.
  Bytes Recv(int from, const std::string& tag, Deadline deadline) override {
    return Await(from, tag, deadline, /*any_peer_lost_fails=*/true);
  }
  std::optional<int> LostRank() const override;
  // Waits until every message sent so far has been acknowledged by its
  // receiver; throws a delivery failure, or kUnavailable at `deadline`.
  void Flush(Deadline deadline);
  // Flush, then a goodbye to every peer and wait for every peer's goodbye
  // (a peer says it only after its own Flush, so nobody closes while a peer
  // still waits for an acknowledgement from it), then wait (until
  // `deadline`) for our goodbyes' acknowledgements: a goodbye merely queued
  // when the process exits would be lost, and its peer would wait for it in
  // vain. A goodbye that stays unacknowledged is not an error: its peer
  // closes only after every goodbye reached it, ours included.
  void Shutdown(Deadline deadline) override;

  // "worker:2" or "rank 2".
  const std::string& RankName(int rank) const { return rank_names_[rank]; }

 private:
  void Serve(Message request, std::function<void(Message)> respond);
  void ServeHello(const Message& request, std::function<void(Message)> respond);
  std::string Hello() const;
  // Empty when `hello` (from a peer) agrees with ours, else why not.
  std::string CheckHello(const std::string& hello, int expected_rank) const;
  void Handshake(const std::vector<std::string>& addresses);
  // Throws for the peers in `unreachable` (their names, addresses and errors)
  // after `elapsed` of the handshake: a wait that ran out, or a wrong answer.
  [[noreturn]] void FailUnanswered(const std::string& unreachable, std::chrono::steady_clock::duration elapsed) const;
  // The next message from `from` under `tag`; fails when `from` (or, with
  // any_peer_lost_fails, any peer) stops answering, or at the deadline.
  Bytes Await(int from, const std::string& tag, Deadline deadline, bool any_peer_lost_fails);
  void Deliver(int from, const std::string& tag, Bytes bytes);
  void RecordFailure(const Error& error);
  void ThrowIfFailed();
  void CheckRank(int peer, const char* verb, const std::string& tag) const;

  const int rank_;
  const int num_ranks_;
  const ZmqLinkOptions options_;
  std::vector<std::string> rank_names_;
  std::string address_;

  mutable std::mutex mu_;  // guards queues_, failure_, unacknowledged_, hellos_served_
  std::condition_variable changed_;
  std::map<std::pair<int, std::string>, std::deque<Bytes>> queues_;
  std::optional<Error> failure_;
  int64_t unacknowledged_ = 0;
  std::set<int> hellos_served_;  // ranks whose hello this rank answered

  // Declared last: stopped first, while the mailbox they fill still exists.
  std::vector<std::unique_ptr<Channel>> channels_;  // [rank]; null for self
  std::unique_ptr<MessageServer> server_;
};

}  // namespace dflow::dist

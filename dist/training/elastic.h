// Elastic data-parallel training (Horovod's elastic mode, PyTorch's elastic
// agent): the ring's membership may change while a job runs. Workers meet at
// a rendezvous server (hosted by `dflow launch --elastic`), which forms
// numbered rounds: the members of a round, in rank order, and the address
// each one's ring link listens at. A round ends when a member dies (the
// survivors' collectives fail within the heartbeat timeout) or when a worker
// asks to join (the chief polls at every step boundary); every member then
// joins the next round with the number of the steps it completed, and the
// server forms it from the members that came back (a member that is silent
// for the heartbeat timeout is dead) plus the workers waiting to join.
//
// Rollback: steps are synchronous, so survivors differ by at most the one
// step the failure interrupted. The next round's rank 0 is the member that
// completed the most steps (ties: the lower old rank), and every member
// takes its variables (optimizer state included), as a joining worker does:
// no member keeps a copy of older state, and no completed step is redone.
//
//   ElasticRingStrategy ring(ElasticWorker::FromEnvironment(), specs);  // joins the first round
//   for each step:
//     try { if (ring.AnyWorker(stop)) break; RunDataParallelStep(...); }
//     catch (const MembershipChanged& change) {
//       ring.Regroup(completed_step);                      // the next round
//       SynchronizeVariables(...);                         // rank 0's state
//       reshard the input for ring.worker() of ring.num_workers();
//     }
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dist/transport/wire.h"
#include "dist/training/ring_training.h"
#include "graph/status.h"

namespace dflow::dist {

class Channel;
class MessageServer;

struct RendezvousOptions {
  int min_workers = 1;
  int max_workers = 1;
  // The first round forms as soon as this many workers joined (the workers
  // the launcher starts), or, after `start_wait`, with at least min_workers.
  int initial_workers = 1;
  std::chrono::milliseconds start_wait{60000};
  // A member of a broken round that is still heard (its heartbeats) but has
  // not come back after this long is left out of the next round.
  std::chrono::milliseconds rejoin_wait{30000};
  // Silent this long: dead (the transport's heartbeat timeout).
  std::chrono::milliseconds dead_after{3000};
};

// One round as a member sees it.
struct Round {
  int64_t number = 0;  // 1, 2, ...
  int rank = 0;
  std::vector<std::string> ids;        // the members' names, by rank ("worker:0")
  std::vector<std::string> addresses;  // their ring links' addresses, by rank
  int64_t step = 0;                    // the steps rank 0 completed
  std::string change;                  // how it differs from the last one ("worker:1 died")
};

// The rendezvous: forms the rounds, tells each member its rank. Serves on
// its own I/O thread plus a timer thread (deaths and waits are timed).
class RendezvousServer {
 public:
  // Binds "host:port" (port 0: a free one).
  RendezvousServer(const std::string& address, RendezvousOptions options);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  int port() const;
  // Set when the job cannot go on (fewer than min_workers left): why.
  std::optional<std::string> failure() const;
  // The rounds formed so far.
  int64_t rounds() const;
  // Worker `id` is known to be gone (its launcher saw it exit): it counts as
  // dead at once, and a first round still forming stops waiting for it.
  void WorkerLost(const std::string& id);

 private:
  // A worker waiting for its next round.
  struct Joiner {
    std::string id, address, sender;
    int64_t step = 0, left_round = 0;
    int preferred_rank = -1;
    int64_t arrival = 0;
    std::function<void(Message)> respond;
  };
  void Serve(Message request, std::function<void(Message)> respond, const std::string& sender);
  void Join(const Message& request, std::function<void(Message)> respond, const std::string& sender);
  bool RegroupWanted(int64_t round) const;
  // Under mu_: forms the next round once its members are known.
  void MaybeForm();
  void FormFirst();
  void FormNext();
  void Form(std::vector<Joiner> members, const std::string& change);
  void FailJob(const std::string& why);
  bool Dead(const std::string& sender) const;
  bool Lost(const Joiner& j) const { return lost_.count(j.id) > 0 || Dead(j.sender); }

  const RendezvousOptions options_;
  mutable std::mutex mu_;
  std::vector<Joiner> waiting_;            // joined, not yet answered
  std::vector<std::string> members_;       // the current round's ids, by rank
  std::map<std::string, std::string> member_senders_;  // id -> connection
  int64_t round_ = 0;
  bool broken_ = false;  // a member came back: the current round is over
  std::chrono::steady_clock::time_point first_join_, broken_since_;
  std::optional<std::string> failure_;
  bool finished_ = false;  // the chief said the job is done: no more rounds
  int64_t arrivals_ = 0;
  int initial_workers_;                 // options_.initial_workers less those lost before round 1
  std::map<std::string, bool> lost_;    // ids reported by WorkerLost
  bool stop_ = false;
  std::condition_variable stop_cv_;
  std::unique_ptr<MessageServer> server_;
  std::thread timer_;
};

// A member's side of the rendezvous.
class RendezvousClient {
 public:
  // `id` names this worker in every message and error ("worker:2", "host:pid").
  RendezvousClient(std::string rendezvous, std::string id);
  ~RendezvousClient();

  const std::string& id() const { return id_; }
  // Joins the next round (blocks until it forms): `link_address` is where
  // this worker's ring link listens, `completed_step` the steps it did,
  // `left_round` the round it leaves (0: none). `preferred_rank` orders the
  // first round (the launcher's index). Throws kFailedPrecondition with the
  // server's reason when the job cannot go on.
  Round Join(const std::string& link_address, int64_t completed_step, int64_t left_round, int preferred_rank,
             std::chrono::milliseconds timeout);
  // True when round `round` should end at this step boundary: a worker
  // waits to join (and the ring is below its maximum) or a member left.
  bool RegroupWanted(int64_t round);
  // The chief's last word: the job is done, later joins are refused.
  void Finished();

 private:
  std::string id_;
  std::unique_ptr<Channel> channel_;
};

// A change of membership seen in a collective: the caller regroups.
class MembershipChanged : public Error {
 public:
  explicit MembershipChanged(std::string why) : Error(Code::kUnavailable, std::move(why)) {}
};

// Where a worker finds its rendezvous and how it is named: from
// DFLOW_ELASTIC ("host:port" of the rendezvous), DFLOW_ELASTIC_ID (default
// "HOST:PID") and DFLOW_ELASTIC_RANK (the launcher's index; default: none).
struct ElasticWorker {
  std::string rendezvous;
  std::string id;
  int preferred_rank = -1;
  // Nullopt when DFLOW_ELASTIC is not set.
  static std::optional<ElasticWorker> FromEnvironment();
};

// The ring all-reduce strategy over a membership that may change. Every
// collective either completes on the current round or throws
// MembershipChanged; then Regroup, and every member takes rank 0's variables.
class ElasticRingStrategy final : public DataParallelStrategy {
 public:
  // Joins the first round that takes this worker (blocks up to `join_timeout`).
  ElasticRingStrategy(const ElasticWorker& worker, std::vector<GradientSpec> specs, RingOptions options = {},
                      std::chrono::milliseconds join_timeout = std::chrono::hours(24));
  ~ElasticRingStrategy() override;

  int worker() const override { return round_.rank; }
  int num_workers() const override { return static_cast<int>(round_.ids.size()); }
  const Round& round() const { return round_; }

  void BroadcastFromChief(const std::string& name, Tensor& value) override;
  std::vector<Tensor> AverageGradients(const std::vector<Tensor>& gradients) override;
  void GradientReady(int index, const Tensor& gradient) override;
  std::vector<Tensor> AverageReadyGradients() override;
  // Also ends the round (MembershipChanged on every member, at the same
  // step) when the chief learns that a worker waits to join.
  bool AnyWorker(bool flag) override;
  void Finish() override;

  // Leaves the current round and joins the next; `completed_step` is the
  // number of steps this worker has done. Throws (not MembershipChanged)
  // when the job cannot go on.
  void Regroup(int64_t completed_step);

 private:
  // Joins a round and connects its ring; a member that does not answer the
  // ring's hello (it died since the round formed) makes it regroup again.
  void JoinRound(int64_t completed_step, int64_t left_round);
  template <typename Body>
  auto Guarded(const char* what, Body&& body) -> decltype(body());

  std::vector<GradientSpec> specs_;
  RingOptions options_;
  std::chrono::milliseconds join_timeout_;
  int preferred_rank_;
  std::string rendezvous_address_;
  RendezvousClient rendezvous_;
  Round round_;
  std::unique_ptr<RingAllReduceStrategy> ring_;
  bool broken_ = false;  // a collective failed: only Regroup may follow
};

}  // namespace dflow::dist

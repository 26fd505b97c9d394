// ElasticRingStrategy (elastic.h): a RingAllReduceStrategy per round, and
// the rendezvous between rounds.
#include <iostream>

#include "dist/cluster.h"
#include "dist/coordinator.h"
#include "dist/training/elastic.h"

namespace dflow::dist {
namespace {

// Every member of a round was heard by the rendezvous when the round formed
// and binds its link as soon as it learns the round, so a peer that does not
// answer the ring's hello within this long has died since.
constexpr std::chrono::milliseconds kRoundConnectTimeout{10000};

// Errors that mean a peer (or the ring) is gone rather than a mistake in
// the program: the survivors regroup.
bool LostPeer(const Error& e) {
  return e.code() == Code::kUnavailable || e.code() == Code::kCancelled;
}

}  // namespace

ElasticRingStrategy::ElasticRingStrategy(const ElasticWorker& worker, std::vector<GradientSpec> specs,
                                         RingOptions options, std::chrono::milliseconds join_timeout)
    : specs_(std::move(specs)),
      options_(std::move(options)),
      join_timeout_(join_timeout),
      preferred_rank_(worker.preferred_rank),
      rendezvous_address_(worker.rendezvous),
      rendezvous_(worker.rendezvous, worker.id) {
  JoinRound(0, 0);
}

ElasticRingStrategy::~ElasticRingStrategy() = default;

void ElasticRingStrategy::JoinRound(int64_t completed_step, int64_t left_round) {
  auto [rendezvous_host, rendezvous_port] = ParseHostPort(rendezvous_address_, "the elastic rendezvous");
  const std::string host = LocalAddressToward(rendezvous_host, rendezvous_port);
  for (;;) {
    ring_.reset();  // the old round's link closes before the next one binds
    const std::string address = StrCat(host, ":", FreePort());
    round_ = rendezvous_.Join(address, completed_step, left_round, preferred_rank_, join_timeout_);
    ZmqLinkOptions link = options_.link;
    link.fingerprint = StrCat(link.fingerprint, " elastic ", rendezvous_address_, " round ", round_.number);
    link.rank_names = round_.ids;
    link.startup_timeout = std::min(link.startup_timeout, kRoundConnectTimeout);
    auto zmq_link = std::make_unique<ZmqLink>(round_.rank, num_workers(), address, link);
    try {
      zmq_link->Connect(round_.addresses);
    } catch (const Error& e) {
      if (!LostPeer(e)) throw;
      std::cerr << rendezvous_.id() << ": round " << round_.number << " did not connect (" << e.message()
                << "); joining the next" << std::endl;
      left_round = round_.number;
      continue;
    }
    ring_ = RingAllReduceStrategy::Own(std::move(zmq_link), specs_, options_);
    broken_ = false;
    return;
  }
}

void ElasticRingStrategy::Regroup(int64_t completed_step) { JoinRound(completed_step, round_.number); }

template <typename Body>
auto ElasticRingStrategy::Guarded(const char* what, Body&& body) -> decltype(body()) {
  if (broken_)
    Fail(Code::kFailedPrecondition, "elastic worker ", rendezvous_.id(), ": ", what,
         " after a membership change; Regroup first");
  try {
    return body();
  } catch (const MembershipChanged&) {
    throw;
  } catch (const Error& e) {
    if (!LostPeer(e)) throw;
    broken_ = true;
    throw MembershipChanged(StrCat("round ", round_.number, " (", num_workers(), " workers) broke during ", what,
                                   ": ", e.message()));
  }
}

void ElasticRingStrategy::BroadcastFromChief(const std::string& name, Tensor& value) {
  Guarded("a broadcast", [&] { ring_->BroadcastFromChief(name, value); });
}

std::vector<Tensor> ElasticRingStrategy::AverageGradients(const std::vector<Tensor>& gradients) {
  return Guarded("a gradient all-reduce", [&] { return ring_->AverageGradients(gradients); });
}

void ElasticRingStrategy::GradientReady(int index, const Tensor& gradient) {
  Guarded("a gradient all-reduce", [&] { ring_->GradientReady(index, gradient); });
}

std::vector<Tensor> ElasticRingStrategy::AverageReadyGradients() {
  return Guarded("a gradient all-reduce", [&] { return ring_->AverageReadyGradients(); });
}

// One all-reduce carries both votes: the stop flag, and the chief's word
// that the round should end here (a worker waits to join, or one left).
bool ElasticRingStrategy::AnyWorker(bool flag) {
  return Guarded("the step boundary's vote", [&] {
    Tensor votes(DType::kInt32, Shape({2}));
    votes.data<int32_t>()[0] = flag ? 1 : 0;
    votes.data<int32_t>()[1] = is_chief() && rendezvous_.RegroupWanted(round_.number) ? 1 : 0;
    ring_->communicator().AllReduce("any_worker", votes, ReduceOp::kSum);
    if (votes.data<int32_t>()[1] > 0) {
      broken_ = true;
      throw MembershipChanged(StrCat("round ", round_.number, " ends: the membership changes"));
    }
    return votes.data<int32_t>()[0] > 0;
  });
}

void ElasticRingStrategy::Finish() {
  Guarded("the end of the run", [&] { ring_->Finish(); });
  if (is_chief()) rendezvous_.Finished();
}

}  // namespace dflow::dist

// The elastic rendezvous server and client (elastic.h). Messages are
// kRendezvous requests whose text is JSON:
//   {"op": "join", "id", "address", "step", "left_round", "preferred_rank"}
//     -> (when the round forms) {"round", "rank", "ids", "addresses", "step", "change"}
//   {"op": "regroup?", "round"} -> {"regroup": bool}
//   {"op": "finished"} -> {}
// A refused join is an error reply (kFailedPrecondition) with the reason.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "dist/cluster.h"
#include "dist/coordinator.h"
#include "dist/training/elastic.h"
#include "dist/transport/zmq_channel.h"
#include "dist/transport/zmq_server.h"
#include "graph/json.h"

namespace dflow::dist {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

Message Reply(const Json& body) {
  Message reply;
  reply.type = MessageType::kReply;
  reply.text = body.dump();
  return reply;
}

// A field of a request, or kInvalidArgument naming it.
template <typename T>
T Field(const Json& request, const char* name) {
  if (!request.contains(name)) Fail(Code::kInvalidArgument, "rendezvous request without '", name, "'");
  try {
    return request[name].get<T>();
  } catch (const nlohmann::json::exception&) {
    Fail(Code::kInvalidArgument, "rendezvous request field '", name, "' has the wrong type");
  }
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

RendezvousServer::RendezvousServer(const std::string& address, RendezvousOptions options)
    : options_(options), initial_workers_(options.initial_workers) {
  DFLOW_REQUIRE(options_.min_workers >= 1 && options_.min_workers <= options_.max_workers,
                "elastic: --min-workers must be 1..--max-workers, got ", options_.min_workers, " and ",
                options_.max_workers);
  DFLOW_REQUIRE(options_.initial_workers >= options_.min_workers && options_.initial_workers <= options_.max_workers,
                "elastic: the initial workers (", options_.initial_workers, ") must be within --min-workers ",
                options_.min_workers, " and --max-workers ", options_.max_workers);
  server_ = std::make_unique<MessageServer>(
      address, [this](Message request, MessageServer::Respond respond, const std::string& sender) {
        Serve(std::move(request), std::move(respond), sender);
      });
  // Deaths and waits are timed: look again ten times a second.
  timer_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stop_) {
      stop_cv_.wait_for(lock, std::chrono::milliseconds(100));
      if (!stop_) MaybeForm();
    }
  });
}

RendezvousServer::~RendezvousServer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  timer_.join();
  server_->Stop();
}

int RendezvousServer::port() const { return server_->port(); }

std::optional<std::string> RendezvousServer::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

int64_t RendezvousServer::rounds() const {
  std::lock_guard lock(mu_);
  return round_;
}

void RendezvousServer::WorkerLost(const std::string& id) {
  std::lock_guard lock(mu_);
  if (lost_.count(id)) return;
  lost_[id] = true;
  const bool member = std::find(members_.begin(), members_.end(), id) != members_.end();
  if (round_ == 0 && initial_workers_ > 0) --initial_workers_;
  if (member && !broken_) {  // the survivors will fail their collectives: wait for them, not for it
    broken_ = true;
    broken_since_ = Clock::now();
  }
  MaybeForm();
}

void RendezvousServer::Serve(Message request, std::function<void(Message)> respond, const std::string& sender) {
  try {
    if (request.type != MessageType::kRendezvous)
      Fail(Code::kInvalidArgument, "the elastic rendezvous serves only rendezvous requests, not ",
           MessageTypeName(request.type));
    Json body = ParseJson<Json>(request.text, "a rendezvous request");
    if (!body.is_object()) Fail(Code::kInvalidArgument, "a rendezvous request must be a JSON object");
    const std::string op = Field<std::string>(body, "op");
    if (op == "join") return Join(request, std::move(respond), sender);
    if (op == "regroup?") {
      const int64_t round = Field<int64_t>(body, "round");
      std::lock_guard lock(mu_);
      return respond(Reply({{"regroup", RegroupWanted(round)}}));
    }
    if (op == "finished") {
      std::lock_guard lock(mu_);
      finished_ = true;
      FailJob("the job has finished");
      return respond(Reply(Json::object()));
    }
    Fail(Code::kInvalidArgument, "unknown rendezvous request '", op, "'");
  } catch (const Error& e) {
    std::cerr << "elastic rendezvous: refused a request: " << e.message() << std::endl;
    respond(Message::ErrorReply(request.request_id, e));
  }
}

void RendezvousServer::Join(const Message& request, std::function<void(Message)> respond, const std::string& sender) {
  Json body = ParseJson<Json>(request.text, "a rendezvous request");
  Joiner joiner{.id = Field<std::string>(body, "id"),
                .address = Field<std::string>(body, "address"),
                .sender = sender,
                .step = Field<int64_t>(body, "step"),
                .left_round = Field<int64_t>(body, "left_round"),
                .preferred_rank = Field<int>(body, "preferred_rank"),
                .arrival = 0,
                .respond = std::move(respond)};
  DFLOW_REQUIRE(!joiner.id.empty(), "a rendezvous join without a worker id");
  ParseHostPort(joiner.address, "a joining worker's address");
  std::lock_guard lock(mu_);
  if (failure_) return joiner.respond(Message::ErrorReply(0, Error(Code::kFailedPrecondition, *failure_)));
  lost_.erase(joiner.id);  // a worker the launcher started again
  // The same worker asking again (its earlier request timed out) replaces itself.
  std::erase_if(waiting_, [&](const Joiner& j) { return j.id == joiner.id; });
  if (waiting_.empty() && round_ == 0) first_join_ = Clock::now();
  joiner.arrival = arrivals_++;
  waiting_.push_back(std::move(joiner));
  MaybeForm();
}

bool RendezvousServer::RegroupWanted(int64_t round) const {
  if (round != round_ || broken_) return true;
  if (static_cast<int>(members_.size()) >= options_.max_workers) return false;
  return std::any_of(waiting_.begin(), waiting_.end(), [&](const Joiner& j) { return j.left_round != round_; });
}

bool RendezvousServer::Dead(const std::string& sender) const {
  const int64_t silent = server_->liveness()->MillisSinceHeard(sender);
  return silent < 0 || silent > options_.dead_after.count();
}

void RendezvousServer::MaybeForm() {
  if (failure_) return FailJob(*failure_);
  std::erase_if(waiting_, [&](const Joiner& j) { return Lost(j); });  // died while waiting
  if (round_ == 0) return FormFirst();
  for (const Joiner& j : waiting_)
    if (j.left_round == round_ && !broken_) {
      broken_ = true;
      broken_since_ = Clock::now();
    }
  if (broken_) FormNext();
}

// The launcher's workers in its order; after start_wait, whoever came.
void RendezvousServer::FormFirst() {
  if (waiting_.empty()) return;
  const auto waited = Clock::now() - first_join_;
  const int count = static_cast<int>(waiting_.size());
  if (count < initial_workers_ && waited < options_.start_wait) return;
  if (count < options_.min_workers)
    return FailJob(StrCat("only ", count, " worker(s) joined within ", Seconds(options_.start_wait),
                          " s, fewer than --min-workers ", options_.min_workers));
  std::vector<Joiner> members = waiting_;
  std::stable_sort(members.begin(), members.end(), [](const Joiner& a, const Joiner& b) {
    auto key = [](const Joiner& j) { return j.preferred_rank < 0 ? INT32_MAX : j.preferred_rank; };
    return key(a) != key(b) ? key(a) < key(b) : a.arrival < b.arrival;
  });
  members.resize(std::min<size_t>(members.size(), options_.max_workers));
  Form(std::move(members), "");
}

// Once every member of the broken round is back or dead (or rejoin_wait
// passed): the members back, furthest first, then the waiting workers.
void RendezvousServer::FormNext() {
  std::vector<Joiner> back, joining;
  for (const Joiner& j : waiting_) (j.left_round == round_ ? back : joining).push_back(j);
  std::vector<std::string> lost;
  bool pending = false;
  for (const std::string& id : members_) {
    if (std::any_of(back.begin(), back.end(), [&](const Joiner& j) { return j.id == id; })) continue;
    if (!lost_.count(id) && !Dead(member_senders_[id])) pending = true;
    lost.push_back(id);
  }
  if (pending && Clock::now() - broken_since_ < options_.rejoin_wait) return;
  auto old_rank = [&](const std::string& id) { return std::find(members_.begin(), members_.end(), id) - members_.begin(); };
  std::stable_sort(back.begin(), back.end(), [&](const Joiner& a, const Joiner& b) {
    return a.step != b.step ? a.step > b.step : old_rank(a.id) < old_rank(b.id);
  });
  std::stable_sort(joining.begin(), joining.end(), [](const Joiner& a, const Joiner& b) { return a.arrival < b.arrival; });
  std::vector<Joiner> members = back;
  for (const Joiner& j : joining)
    if (static_cast<int>(members.size()) < options_.max_workers) members.push_back(j);
  std::string change;
  for (const std::string& id : lost) change += StrCat(change.empty() ? "" : "; ", id, " left");
  for (size_t i = back.size(); i < members.size(); ++i) change += StrCat(change.empty() ? "" : "; ", members[i].id, " joined");
  if (static_cast<int>(members.size()) < options_.min_workers)
    return FailJob(StrCat("round ", round_, " lost ", lost.empty() ? std::string("members") : change, ": ",
                          members.size(), " worker(s) left, fewer than --min-workers ", options_.min_workers));
  Form(std::move(members), change);
}

void RendezvousServer::Form(std::vector<Joiner> members, const std::string& change) {
  ++round_;
  broken_ = false;
  members_.clear();
  member_senders_.clear();
  Json ids = Json::array(), addresses = Json::array();
  for (const Joiner& m : members) {
    members_.push_back(m.id);
    member_senders_[m.id] = m.sender;
    ids.push_back(m.id);
    addresses.push_back(m.address);
  }
  std::cerr << "elastic rendezvous: round " << round_ << " of " << members.size() << " worker(s)"
            << (change.empty() ? "" : ": " + change) << std::endl;
  for (size_t rank = 0; rank < members.size(); ++rank)
    members[rank].respond(Reply({{"round", round_}, {"rank", rank}, {"ids", ids}, {"addresses", addresses},
                                 {"step", members[0].step}, {"change", change}}));
  std::erase_if(waiting_, [&](const Joiner& j) { return member_senders_.count(j.id) > 0; });
}

void RendezvousServer::FailJob(const std::string& why) {
  if (!failure_) {
    failure_ = why;
    if (!finished_) std::cerr << "elastic rendezvous: the job cannot go on: " << why << std::endl;
  }
  for (Joiner& j : waiting_) j.respond(Message::ErrorReply(0, Error(Code::kFailedPrecondition, why)));
  waiting_.clear();
}

RendezvousClient::RendezvousClient(std::string rendezvous, std::string id)
    : id_(std::move(id)),
      channel_(std::make_unique<Channel>("elastic rendezvous", rendezvous)) {}

RendezvousClient::~RendezvousClient() = default;

namespace {

Message Request(const Json& body, std::chrono::milliseconds timeout) {
  Message m;
  m.type = MessageType::kRendezvous;
  m.text = body.dump();
  m.deadline_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch() + timeout)
                      .count();
  return m;
}

}  // namespace

Round RendezvousClient::Join(const std::string& link_address, int64_t completed_step, int64_t left_round,
                             int preferred_rank, std::chrono::milliseconds timeout) {
  Message reply;
  try {
    reply = channel_->CallAndWait(Request({{"op", "join"}, {"id", id_}, {"address", link_address},
                                           {"step", completed_step}, {"left_round", left_round},
                                           {"preferred_rank", preferred_rank}},
                                          timeout));
  } catch (const Error& e) {
    Fail(e.code() == Code::kFailedPrecondition ? e.code() : Code::kUnavailable, "elastic worker ", id_,
         " could not join a round: ", e.message());
  }
  Json body = ParseJson<Json>(reply.text, "the rendezvous's answer");
  Round round;
  round.number = Field<int64_t>(body, "round");
  round.rank = Field<int>(body, "rank");
  round.ids = Field<std::vector<std::string>>(body, "ids");
  round.addresses = Field<std::vector<std::string>>(body, "addresses");
  round.step = Field<int64_t>(body, "step");
  round.change = Field<std::string>(body, "change");
  DFLOW_REQUIRE(round.rank >= 0 && static_cast<size_t>(round.rank) < round.ids.size() &&
                    round.ids.size() == round.addresses.size() && round.ids[round.rank] == id_,
                "the rendezvous's answer to ", id_, " is not a round it belongs to");
  return round;
}

bool RendezvousClient::RegroupWanted(int64_t round) {
  Message reply = channel_->CallAndWait(Request({{"op", "regroup?"}, {"round", round}}, std::chrono::seconds(30)));
  return Field<bool>(ParseJson<Json>(reply.text, "the rendezvous's answer"), "regroup");
}

void RendezvousClient::Finished() {
  channel_->CallAndWait(Request({{"op", "finished"}}, std::chrono::seconds(30)));
}

std::optional<ElasticWorker> ElasticWorker::FromEnvironment() {
  const char* rendezvous = std::getenv("DFLOW_ELASTIC");
  if (!rendezvous || !*rendezvous) return std::nullopt;
  ElasticWorker w;
  w.rendezvous = rendezvous;
  ParseHostPort(w.rendezvous, "DFLOW_ELASTIC");
  const char* id = std::getenv("DFLOW_ELASTIC_ID");
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  w.id = id && *id ? std::string(id) : StrCat(host, ":", getpid());
  if (const char* rank = std::getenv("DFLOW_ELASTIC_RANK"); rank && *rank) {
    char* end = nullptr;
    long value = std::strtol(rank, &end, 10);
    DFLOW_REQUIRE(*end == '\0' && value >= 0 && value < 1 << 20, "DFLOW_ELASTIC_RANK must be a rank, got '", rank,
                  "'");
    w.preferred_rank = static_cast<int>(value);
  }
  return w;
}

}  // namespace dflow::dist

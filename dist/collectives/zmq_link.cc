#include "dist/collectives/zmq_link.h"

#include <algorithm>
#include <cstring>

#include "dist/collectives/zmq_link_wire.h"
#include "dist/transport/zmq_channel.h"
#include "dist/transport/zmq_server.h"

namespace dflow::dist {
namespace {

// How often a waiting Recv checks that its peers still answer heartbeats.
constexpr auto kLivenessPoll = std::chrono::milliseconds(100);
// How long the destructor waits for the last messages to be acknowledged.
constexpr auto kCloseFlush = std::chrono::seconds(2);

}  // namespace

ZmqLink::ZmqLink(int rank, int num_ranks, const std::string& bind_address, ZmqLinkOptions options)
    : rank_(rank), num_ranks_(num_ranks), options_(std::move(options)) {
  DFLOW_REQUIRE(num_ranks >= 1 && rank >= 0 && rank < num_ranks, "ZmqLink: rank ", rank,
                " is out of range for ", num_ranks, " ranks");
  DFLOW_REQUIRE(options_.rank_names.empty() || static_cast<int>(options_.rank_names.size()) == num_ranks,
                "ZmqLink: ", options_.rank_names.size(), " rank names for ", num_ranks, " ranks");
  DFLOW_REQUIRE(options_.startup_timeout.count() > 0, "ZmqLink: the start-up timeout must be positive, got ",
                options_.startup_timeout.count(), " ms");
  for (int r = 0; r < num_ranks; ++r)
    rank_names_.push_back(options_.rank_names.empty() ? StrCat("rank ", r) : options_.rank_names[r]);
  server_ = std::make_unique<MessageServer>(
      bind_address, [this](Message request, MessageServer::Respond respond) { Serve(std::move(request), std::move(respond)); });
  address_ = bind_address.substr(0, bind_address.rfind(':') + 1) + std::to_string(server_->port());
  channels_.resize(num_ranks);
}

ZmqLink::~ZmqLink() {
  try {
    Flush(std::chrono::steady_clock::now() + kCloseFlush);
  } catch (const Error&) {
    // Closing anyway: the failure was (or will never be) reported by a call.
  }
}

void ZmqLink::Serve(Message request, std::function<void(Message)> respond) {
  if (request.type == MessageType::kLinkMessage && request.text == kHelloTag)
    return ServeHello(request, std::move(respond));
  std::optional<LinkMessage> message = DecodeLinkMessage(request);
  if (!message || message->from < 0 || message->from >= num_ranks_ || message->from == rank_) {
    return respond(Message::ErrorReply(
        request.request_id,
        Error(Code::kInvalidArgument,
              StrCat(RankName(rank_), " of ", num_ranks_, " takes only LinkMessages (tensors 'from', ",
                     "'bytes') from other ranks; got a malformed ", MessageTypeName(request.type)))));
  }
  Deliver(message->from, request.text, std::move(message->bytes));
  respond(Message{});
}

void ZmqLink::CheckRank(int peer, const char* verb, const std::string& tag) const {
  DFLOW_REQUIRE(peer >= 0 && peer < num_ranks_, RankName(rank_), " ", verb, " '", tag, "' rank ",
                peer, ", which is out of range 0..", num_ranks_ - 1);
  DFLOW_REQUIRE(peer == rank_ || channels_[peer], RankName(rank_), " ", verb, " '", tag, "' ",
                RankName(peer), " before Connect()");
}

void ZmqLink::Send(int to, const std::string& tag, Bytes bytes) {
  CheckRank(to, "sends to", tag);
  ThrowIfFailed();
  if (to == rank_) return Deliver(rank_, tag, std::move(bytes));
  {
    std::lock_guard lock(mu_);
    ++unacknowledged_;
  }
  // One DEALER-ROUTER connection keeps the order; the ack only counts.
  channels_[to]->Call(EncodeLinkMessage(rank_, tag, bytes), [this, to, tag](std::optional<Error> error,
                                                                           Message reply) {
    if (!error && reply.type == MessageType::kError)
      error = Error(reply.error_code.value_or(Code::kInternal), reply.text);
    if (error && !channels_[to]->peer_alive()) {
      // Worded as a receive that lost its peer words it, so every survivor
      // names the dead rank the same way, whichever call noticed first.
      error = Error(error->code(), StrCat(RankName(to), " stopped answering heartbeats (",
                                          channels_[to]->address(), "): it died or hangs; ", error->what()));
    }
    if (error)
      RecordFailure(Error(error->code(), StrCat(RankName(rank_), " could not deliver '", tag, "' to ",
                                                RankName(to), ": ", error->what())));
    {
      std::lock_guard lock(mu_);
      --unacknowledged_;
    }
    changed_.notify_all();
  });
}

std::optional<int> ZmqLink::LostRank() const {
  for (int r = 0; r < num_ranks_; ++r)
    if (channels_[r] && !channels_[r]->peer_alive()) return r;
  return std::nullopt;
}

Bytes ZmqLink::Await(int from, const std::string& tag, Deadline deadline, bool any_peer_lost_fails) {
  CheckRank(from, "receives from", tag);
  auto key = std::make_pair(from, tag);
  std::unique_lock lock(mu_);
  for (;;) {
    if (failure_) throw *failure_;
    auto it = queues_.find(key);
    if (it != queues_.end() && !it->second.empty()) {
      Bytes bytes = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) queues_.erase(it);
      return bytes;
    }
    std::optional<int> lost = any_peer_lost_fails ? LostRank() : std::nullopt;
    if (!any_peer_lost_fails && from != rank_ && !channels_[from]->peer_alive()) lost = from;
    if (lost) {
      Fail(Code::kUnavailable, RankName(rank_), " waits for '", tag, "' from ", RankName(from), ", but ",
           RankName(*lost), " stopped answering heartbeats (", channels_[*lost]->address(),
           "): it died or hangs");
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline)
      Fail(Code::kUnavailable, RankName(rank_), " timed out waiting for '", tag, "' from ", RankName(from));
    changed_.wait_until(lock, std::min(deadline, now + kLivenessPoll));
  }
}

void ZmqLink::Flush(Deadline deadline) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (failure_) throw *failure_;
    if (unacknowledged_ == 0) return;
    if (std::chrono::steady_clock::now() >= deadline)
      Fail(Code::kUnavailable, RankName(rank_), ": ", unacknowledged_,
           " message(s) still unacknowledged at the flush deadline");
    changed_.wait_until(lock, deadline);
  }
}

void ZmqLink::Shutdown(Deadline deadline) {
  Flush(deadline);
  for (int r = 0; r < num_ranks_; ++r)
    if (r != rank_) Send(r, kGoodbyeTag, {});
  // A peer that got every goodbye may close at once: only the awaited one's silence matters.
  for (int r = 0; r < num_ranks_; ++r)
    if (r != rank_) Await(r, kGoodbyeTag, deadline, /*any_peer_lost_fails=*/false);
  std::unique_lock lock(mu_);
  changed_.wait_until(lock, deadline, [this] { return unacknowledged_ == 0; });
}

void ZmqLink::Deliver(int from, const std::string& tag, Bytes bytes) {
  {
    std::lock_guard lock(mu_);
    queues_[{from, tag}].push_back(std::move(bytes));
  }
  changed_.notify_all();
}

void ZmqLink::RecordFailure(const Error& error) {
  {
    std::lock_guard lock(mu_);
    if (!failure_) failure_ = error;
  }
  changed_.notify_all();
}

void ZmqLink::ThrowIfFailed() {
  std::lock_guard lock(mu_);
  if (failure_) throw *failure_;
}

}  // namespace dflow::dist

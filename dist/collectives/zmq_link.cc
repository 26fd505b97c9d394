#include "dist/collectives/zmq_link.h"

#include <algorithm>
#include <cstring>

#include "dist/zmq_channel.h"
#include "dist/zmq_server.h"

namespace dflow::dist {
namespace {

// How often a waiting Recv checks that its peer still answers heartbeats.
constexpr auto kLivenessPoll = std::chrono::milliseconds(100);

std::string RankName(int rank) { return StrCat("rank ", rank); }

Message EncodeLinkMessage(int from, const std::string& tag, const Bytes& bytes) {
  Message m;
  m.type = MessageType::kLinkMessage;
  m.text = tag;
  m.tensors.push_back({"from", Tensor::Scalar<int32_t>(from)});
  Tensor payload(DType::kUInt8, Shape{static_cast<int64_t>(bytes.size())});
  if (!bytes.empty()) std::memcpy(payload.raw_data(), bytes.data(), bytes.size());
  m.tensors.push_back({"bytes", std::move(payload)});
  return m;
}

}  // namespace

ZmqLink::ZmqLink(int rank, int num_ranks, const std::string& bind_address)
    : rank_(rank), num_ranks_(num_ranks) {
  DFLOW_REQUIRE(num_ranks >= 1 && rank >= 0 && rank < num_ranks, "ZmqLink: rank ", rank,
                " is out of range for ", num_ranks, " ranks");
  server_ = std::make_unique<MessageServer>(bind_address, [this](Message request,
                                                                 MessageServer::Respond respond) {
    const auto& t = request.tensors;
    bool well_formed = request.type == MessageType::kLinkMessage && t.size() == 2 &&
                       t[0].value.dtype() == DType::kInt32 && t[0].value.NumElements() == 1 &&
                       t[1].value.dtype() == DType::kUInt8 && t[1].value.shape().rank() == 1;
    int from = well_formed ? t[0].value.data<int32_t>()[0] : -1;
    if (!well_formed || from < 0 || from >= num_ranks_ || from == rank_) {
      return respond(Message::ErrorReply(
          request.request_id,
          Error(Code::kInvalidArgument, StrCat("rank ", rank_, " of ", num_ranks_, " takes only ",
                                               "LinkMessages (tensors 'from', 'bytes') from other ",
                                               "ranks; got a malformed ", MessageTypeName(request.type)))));
    }
    const auto* data = static_cast<const uint8_t*>(t[1].value.raw_data());
    Deliver(from, request.text, Bytes(data, data + t[1].value.NumElements()));
    respond(Message{});
  });
  address_ = bind_address.substr(0, bind_address.rfind(':') + 1) + std::to_string(server_->port());
  channels_.resize(num_ranks);
}

ZmqLink::~ZmqLink() = default;

void ZmqLink::Connect(const std::vector<std::string>& addresses) {
  DFLOW_REQUIRE(static_cast<int>(addresses.size()) == num_ranks_, "ZmqLink: ", addresses.size(),
                " addresses for ", num_ranks_, " ranks");
  for (int r = 0; r < num_ranks_; ++r)
    if (r != rank_) channels_[r] = std::make_unique<Channel>(RankName(r), addresses[r]);
}

void ZmqLink::CheckRank(int peer, const char* verb, const std::string& tag) const {
  DFLOW_REQUIRE(peer >= 0 && peer < num_ranks_, "rank ", rank_, " ", verb, " '", tag, "' rank ",
                peer, ", which is out of range 0..", num_ranks_ - 1);
  DFLOW_REQUIRE(peer == rank_ || channels_[peer], "rank ", rank_, " ", verb, " '", tag,
                "' rank ", peer, " before Connect()");
}

void ZmqLink::Send(int to, const std::string& tag, Bytes bytes) {
  CheckRank(to, "sends to", tag);
  ThrowIfFailed();
  if (to == rank_) return Deliver(rank_, tag, std::move(bytes));
  // The ack is not awaited; one DEALER-ROUTER connection keeps the order.
  channels_[to]->Call(EncodeLinkMessage(rank_, tag, bytes),
                      [this, to, tag](std::optional<Error> error, Message reply) {
                        if (!error && reply.type == MessageType::kError)
                          error = Error(reply.error_code.value_or(Code::kInternal), reply.text);
                        if (error)
                          RecordFailure(Error(error->code(), StrCat("rank ", rank_, " could not deliver '",
                                                                   tag, "' to rank ", to, ": ",
                                                                   error->what())));
                      });
}

Bytes ZmqLink::Recv(int from, const std::string& tag, Deadline deadline) {
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
    if (from != rank_ && !channels_[from]->peer_alive())
      Fail(Code::kUnavailable, "rank ", rank_, " waits for '", tag, "' from rank ", from,
           ", which stopped answering (", channels_[from]->address(), ")");
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline)
      Fail(Code::kUnavailable, "rank ", rank_, " timed out waiting for '", tag, "' from rank ", from);
    changed_.wait_until(lock, std::min(deadline, now + kLivenessPoll));
  }
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

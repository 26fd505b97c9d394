// ZmqLink's start-up: the hello every rank sends every other rank, retried
// by ZeroMQ until the peer binds, and checked on both sides; and the link of
// one task of a cluster document.
#include <cstring>
#include <sstream>
#include <thread>

#include "dist/cluster.h"
#include "dist/collectives/zmq_link.h"
#include "dist/collectives/zmq_link_wire.h"
#include "dist/transport/zmq_channel.h"
#include "dist/transport/zmq_server.h"

namespace dflow::dist {
namespace {

// How long a rank whose handshake failed keeps answering hellos.
constexpr auto kVerdictGrace = std::chrono::seconds(2);
constexpr auto kReplyFlush = std::chrono::milliseconds(200);

int64_t EpochMs(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

struct ParsedHello {
  int rank = -1;
  int num_ranks = -1;
  std::string fingerprint;
};

// "<rank>\n<num_ranks>\n<fingerprint>"
std::optional<ParsedHello> ParseHello(const std::string& text) {
  std::istringstream in(text);
  ParsedHello hello;
  if (!(in >> hello.rank >> hello.num_ranks) || in.get() != '\n') return std::nullopt;
  std::getline(in, hello.fingerprint, '\0');
  return hello;
}

// The outcome of saying hello to each peer; shared with the channels'
// callbacks, which may outlive Handshake's frame until the channels close.
struct HelloAnswers {
  std::mutex mu;
  std::condition_variable answered;
  std::vector<bool> done;
  std::vector<std::string> unreachable, disagreeing;  // [rank]: why
};

}  // namespace

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

std::optional<LinkMessage> DecodeLinkMessage(const Message& request) {
  const auto& t = request.tensors;
  bool well_formed = request.type == MessageType::kLinkMessage && t.size() == 2 &&
                     t[0].value.dtype() == DType::kInt32 && t[0].value.NumElements() == 1 &&
                     t[1].value.dtype() == DType::kUInt8 && t[1].value.shape().rank() == 1;
  if (!well_formed) return std::nullopt;
  const auto* data = static_cast<const uint8_t*>(t[1].value.raw_data());
  return LinkMessage{t[0].value.data<int32_t>()[0], Bytes(data, data + t[1].value.NumElements())};
}

std::string ZmqLink::Hello() const {
  return StrCat(rank_, "\n", num_ranks_, "\n", options_.fingerprint);
}

std::string ZmqLink::CheckHello(const std::string& text, int expected_rank) const {
  std::optional<ParsedHello> hello = ParseHello(text);
  if (!hello) return StrCat(RankName(expected_rank), " sent ", RankName(rank_), " a malformed hello");
  std::string peer = StrCat("rank ", hello->rank);
  if (hello->num_ranks != num_ranks_)
    return StrCat(RankName(rank_), " was started with ", num_ranks_, " ranks but ", peer, " with ",
                  hello->num_ranks, ": the ranks have different cluster documents");
  if (hello->rank != expected_rank)
    return StrCat(RankName(rank_), " expected ", RankName(expected_rank), " but ", peer,
                  " answered: two ranks were given the same task");
  if (hello->fingerprint != options_.fingerprint)
    return StrCat(RankName(rank_), " and ", RankName(expected_rank), " belong to different runs: fingerprint '",
                  options_.fingerprint, "' against '", hello->fingerprint, "'");
  return "";
}

void ZmqLink::ServeHello(const Message& request, std::function<void(Message)> respond) {
  std::optional<LinkMessage> hello = DecodeLinkMessage(request);
  std::string text = hello ? std::string(hello->bytes.begin(), hello->bytes.end()) : "";
  std::optional<ParsedHello> parsed = ParseHello(text);
  std::string problem = !parsed ? StrCat(RankName(rank_), " got a malformed hello")
                                : CheckHello(text, parsed->rank >= 0 && parsed->rank < num_ranks_ ? parsed->rank : 0);
  if (parsed && parsed->rank >= 0 && parsed->rank < num_ranks_ && parsed->rank != rank_) {
    std::lock_guard lock(mu_);
    hellos_served_.insert(parsed->rank);
  }
  changed_.notify_all();
  if (problem.empty() && parsed->rank == rank_)
    problem = StrCat(RankName(rank_), " got a hello from another process claiming its own rank: ",
                     "two ranks were given the same task");
  if (problem.empty()) {
    Message reply;
    reply.text = Hello();
    return respond(std::move(reply));
  }
  Error error(Code::kFailedPrecondition, problem);
  RecordFailure(error);
  respond(Message::ErrorReply(request.request_id, error));
}

// A hello that failed before the start-up timeout was answered by
// something that is not this run's peer (a busy port: another program, or a
// dflow process of another run), not met by silence: say that, with the
// time it really took, rather than blame a slow start.
void ZmqLink::FailUnanswered(const std::string& unreachable, std::chrono::steady_clock::duration elapsed) const {
  const auto timeout = options_.startup_timeout;
  const int64_t elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
  if (elapsed < timeout)
    Fail(Code::kUnavailable, RankName(rank_), "'s hello at start-up failed after ", elapsed_ms, " ms for ",
         unreachable, ": something other than this run's rank answers at that address (is the port busy, ",
         "used by another program or another run?)");
  Fail(Code::kUnavailable, RankName(rank_), " waited ", timeout.count(), " ms at start-up for ", unreachable,
       " to answer its hello; start every rank, or raise the start-up timeout");
}

void ZmqLink::Handshake(const std::vector<std::string>& addresses) {
  auto answers = std::make_shared<HelloAnswers>();
  answers->done.assign(num_ranks_, false);
  answers->unreachable.resize(num_ranks_);
  answers->disagreeing.resize(num_ranks_);
  answers->done[rank_] = true;
  const auto timeout = options_.startup_timeout;
  const auto started = std::chrono::steady_clock::now();
  std::string hello = Hello();
  std::vector<std::unique_ptr<Channel>> hello_channels(num_ranks_);
  for (int r = 0; r < num_ranks_; ++r) {
    if (r == rank_) continue;
    // Silence is expected while the peer starts: the heartbeat timeout is the whole start-up.
    hello_channels[r] = std::make_unique<Channel>(
        RankName(r), addresses[r],
        ChannelOptions{.heartbeat_timeout_ms = static_cast<int>(std::min<int64_t>(timeout.count(), 1 << 30))});
    Message request = EncodeLinkMessage(rank_, kHelloTag, Bytes(hello.begin(), hello.end()));
    request.deadline_ms = EpochMs(std::chrono::system_clock::now() + timeout);
    hello_channels[r]->Call(std::move(request), [this, r, answers](std::optional<Error> error, Message reply) {
      std::lock_guard lock(answers->mu);
      if (error && error->code() == Code::kFailedPrecondition) {
        answers->disagreeing[r] = error->message();  // the peer's verdict on our hello
      } else if (error) {
        answers->unreachable[r] = error->what();
      } else {
        answers->disagreeing[r] = CheckHello(reply.text, r);
      }
      answers->done[r] = true;
      answers->answered.notify_all();
    });
  }
  {
    // Every Call ends in its callback by the request deadline; the margin covers the I/O thread.
    std::unique_lock lock(answers->mu);
    answers->answered.wait_for(lock, timeout + std::chrono::seconds(5), [&] {
      return std::all_of(answers->done.begin(), answers->done.end(), [](bool d) { return d; });
    });
  }
  hello_channels.clear();  // fails what is still pending, so `answers` is final
  std::string disagreements, unreachable;
  for (int r = 0; r < num_ranks_; ++r) {
    if (!answers->disagreeing[r].empty()) disagreements += (disagreements.empty() ? "" : "; ") + answers->disagreeing[r];
    if (!answers->unreachable[r].empty())
      unreachable += StrCat(unreachable.empty() ? "" : ", ", RankName(r), " (", addresses[r], ": ",
                            answers->unreachable[r], ")");
  }
  if (!disagreements.empty()) {
    // Stay up a moment for the peers' hellos, so that they hear the verdict
    // from us rather than wait out their start-up timeout for a closed port.
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, kVerdictGrace, [&] { return static_cast<int>(hellos_served_.size()) >= num_ranks_ - 1; });
    // The last answer is queued, not yet sent: give the server's I/O thread a moment.
    lock.unlock();
    std::this_thread::sleep_for(kReplyFlush);
    Fail(Code::kFailedPrecondition, disagreements);
  }
  if (!unreachable.empty()) FailUnanswered(unreachable, std::chrono::steady_clock::now() - started);
}

void ZmqLink::Connect(const std::vector<std::string>& addresses) {
  DFLOW_REQUIRE(static_cast<int>(addresses.size()) == num_ranks_, "ZmqLink: ", addresses.size(),
                " addresses for ", num_ranks_, " ranks");
  Handshake(addresses);
  ThrowIfFailed();  // a peer's hello that disagreed with ours
  // Every peer is up: from now on a silent one is dead.
  for (int r = 0; r < num_ranks_; ++r)
    if (r != rank_) channels_[r] = std::make_unique<Channel>(RankName(r), addresses[r]);
}

std::unique_ptr<ZmqLink> ZmqLink::ForCluster(const ClusterSpec& cluster, ZmqLinkOptions options) {
  const std::optional<TaskId>& self = cluster.self();
  DFLOW_REQUIRE(self && self->job == "worker", "ZmqLink: the cluster document must name this process's ",
                "task, a \"worker\" (got ", self ? StrCat("\"", self->job, "\"") : std::string("none"), ")");
  const std::vector<std::string>& addresses = cluster.jobs().at("worker");
  std::string fingerprint = "workers";
  for (const std::string& address : addresses) fingerprint += " " + address;
  if (!options.fingerprint.empty()) fingerprint += ", run " + options.fingerprint;
  options.fingerprint = fingerprint;
  options.rank_names.clear();
  for (size_t k = 0; k < addresses.size(); ++k) options.rank_names.push_back(StrCat("worker:", k));
  auto link = std::make_unique<ZmqLink>(self->index, static_cast<int>(addresses.size()),
                                        addresses[self->index], std::move(options));
  link->Connect(addresses);
  return link;
}

}  // namespace dflow::dist

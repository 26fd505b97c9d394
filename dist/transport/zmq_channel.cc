#include "dist/transport/zmq_channel.h"

#include <future>

#include "dist/cluster.h"

namespace dflow::dist {

std::string ZmqEndpoint(std::string_view address) {
  ParseHostPort(address, "address");
  return StrCat("tcp://", address);
}

std::string ZmqEndpointOfTarget(std::string_view target) {
  constexpr std::string_view kScheme = "zmq://";
  if (!target.starts_with(kScheme))
    Fail(Code::kInvalidArgument, "session target '", target, "' is not of the form zmq://host:port");
  return ZmqEndpoint(target.substr(kScheme.size()));
}

Channel::Channel(std::string task, std::string address, ChannelOptions options)
    : task_(std::move(task)),
      address_(std::move(address)),
      options_(options),
      socket_(ZmqContext(), zmq::socket_type::dealer) {
  SetSocketLimits(socket_);
  const TransportKeys* keys = options_.plaintext ? nullptr : options_.keys ? options_.keys : ProcessTransportKeys();
  if (keys) SecureClientSocket(socket_, *keys);
  socket_.set(zmq::sockopt::linger, 500);  // let requests posted just before closing go out
  socket_.connect(ZmqEndpoint(address_));
  socket_fd_ = socket_.get(zmq::sockopt::fd);
  last_heard_ = Clock::now();
  next_heartbeat_ = last_heard_;
  io_thread_ = std::thread([this] { Loop(); });
}

Channel::~Channel() {
  stop_ = true;
  wakeup_.Signal();
  io_thread_.join();
  FailAll(Error(Code::kCancelled, StrCat("the channel to task ", task_, " at ", address_, " closed")));
}

// ZMQ_FD is edge-triggered: a send may take in the news that a reply came,
// and then the fd stays quiet. So after sending a request, a reply already
// waiting wakes the I/O thread by hand. A posted message skips that check
// (a poll(2) per tensor pushed): what it may hide is at worst a heartbeat's
// reply, which the I/O thread then reads at its next timeout (100 ms).
bool Channel::SendNow(const Message& message, bool expect_reply) {
  bool sent, reply_waiting = false;
  {
    std::lock_guard<std::mutex> lock(socket_mu_);
    sent = SendMessage(socket_, message);
    if (expect_reply) reply_waiting = socket_.get(zmq::sockopt::events) & ZMQ_POLLIN;
  }
  if (reply_waiting) wakeup_.Signal();
  return sent;
}

// Registers `done` under a fresh id; false (and `done` kept) once the channel closed.
bool Channel::AddPending(uint64_t id, MessageType type, int64_t deadline_ms, Done& done) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_) return false;
  pending_.emplace(id, Pending{type, std::move(done), deadline_ms, Clock::now()});
  return true;
}

Error Channel::ClosedError() const {
  return Error(Code::kCancelled, StrCat("the channel to task ", task_, " is closed"));
}

void Channel::Call(Message request, Done done) {
  uint64_t id = request.request_id = next_request_id_++;
  if (!AddPending(id, request.type, request.deadline_ms, done)) return done(ClosedError(), {});
  std::optional<Error> error;
  try {
    if (!SendNow(request)) error = PeerError(StrCat("cannot queue ", MessageTypeName(request.type), " for"));
  } catch (const Error& e) {
    error = e;
  }
  if (!error) return;
  if (Done failed = TakePending(id)) failed(std::move(error), {});
}

uint64_t Channel::Watch(MessageType what, Done done) {
  uint64_t id = next_request_id_++;
  if (!AddPending(id, what, 0, done)) done(ClosedError(), {});
  return id;
}

Message Channel::CallAndWait(Message request) {
  std::promise<std::pair<std::optional<Error>, Message>> result;
  Call(std::move(request), [&result](std::optional<Error> error, Message reply) {
    result.set_value({std::move(error), std::move(reply)});
  });
  auto [error, reply] = result.get_future().get();
  if (error) throw *error;
  return std::move(reply);
}

bool Channel::Post(Message request) {
  if (stop_) return false;
  request.request_id = next_request_id_++;
  try {
    return SendNow(request, /*expect_reply=*/false);
  } catch (const Error&) {
    return false;
  }
}

void Channel::Loop() {
  while (!stop_) {
    auto now = Clock::now();
    auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_heartbeat_ - now);
    // Wake at least every 100 ms to check deadlines and silence.
    long timeout_ms = std::clamp<long>(wait.count(), 0, 100);
    WaitReadable(socket_fd_, wakeup_, static_cast<int>(timeout_ms));
    std::vector<std::vector<zmq::message_t>> received = ReceiveAll();
    now = Clock::now();
    if (!received.empty()) {
      last_heard_ = now;
      peer_alive_ = true;
    }
    for (auto& frames : received) {
      try {
        Deliver(DecodeFrames(frames, 0));
      } catch (const Error&) {
        // A reply we cannot read matches no request; its request's deadline
        // or the heartbeat timeout ends that request.
      }
      // Free ZeroMQ's buffers now, not after the whole batch: malloc then
      // hands the same (cache-hot) block to the next frame received.
      frames.clear();
    }
    HeartbeatIfDue(now);
    FailExpired(now);
  }
}

// Every message waiting, read until a receive finds none. That receive
// takes in the socket's pending commands, as asking ZMQ_EVENTS would, which
// re-arms ZMQ_FD: one check per wakeup instead of one per message and one
// more at the end. Decoded later, outside the socket's lock.
std::vector<std::vector<zmq::message_t>> Channel::ReceiveAll() {
  std::vector<std::vector<zmq::message_t>> received;
  std::lock_guard<std::mutex> lock(socket_mu_);
  while (true) {
    std::vector<zmq::message_t> frames = ReceiveFrames(socket_);
    if (frames.empty()) break;
    received.push_back(std::move(frames));
  }
  return received;
}

Channel::Done Channel::TakePending(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(id);
  if (it == pending_.end()) return nullptr;
  Done done = std::move(it->second.done);
  pending_.erase(it);
  return done;
}

void Channel::Deliver(Message reply) {
  Pending pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(reply.request_id);
    if (it == pending_.end()) return;  // a heartbeat's reply, or a request already failed
    pending = std::move(it->second);
    pending_.erase(it);
  }
  if (reply.type == MessageType::kError)
    return pending.done(Error(reply.error_code.value_or(Code::kInternal), reply.text), {});
  pending.done(std::nullopt, std::move(reply));
}

void Channel::HeartbeatIfDue(Clock::time_point now) {
  if (now < next_heartbeat_) return;
  next_heartbeat_ = now + std::chrono::milliseconds(options_.heartbeat_interval_ms);
  Message heartbeat;
  heartbeat.type = MessageType::kHeartbeat;
  heartbeat.request_id = next_request_id_++;
  SendNow(heartbeat);
}

// A request fails when its deadline passed, or when the task has been silent
// for the heartbeat timeout since the later of its sending and the last
// message heard (so a request sent to a task that just came back waits for it).
void Channel::FailExpired(Clock::time_point now) {
  auto timeout = std::chrono::milliseconds(options_.heartbeat_timeout_ms);
  peer_alive_ = now - last_heard_ <= timeout;
  int64_t now_ms = NowMs();
  std::vector<std::pair<Done, Error>> failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      Pending& p = it->second;
      std::optional<Error> error;
      if (p.deadline_ms && now_ms > p.deadline_ms)
        error = PeerError(StrCat("deadline exceeded: no reply to ", MessageTypeName(p.type), " from"));
      else if (now - std::max(last_heard_, p.sent_at) > timeout)
        error = PeerError(StrCat("no heartbeat for ", options_.heartbeat_timeout_ms,
                                 " ms (the task died or stopped) while waiting for ",
                                 MessageTypeName(p.type), " from"));
      if (!error) {
        ++it;
        continue;
      }
      failed.emplace_back(std::move(p.done), std::move(*error));
      it = pending_.erase(it);
    }
  }
  for (auto& [done, error] : failed) done(error, {});
}

void Channel::FailAll(const Error& error) {
  std::vector<Done> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, p] : pending_) waiting.push_back(std::move(p.done));
    pending_.clear();
  }
  for (Done& done : waiting) done(error, {});
}

Error Channel::PeerError(std::string_view what) const {
  return Error(Code::kUnavailable, StrCat(what, " task ", task_, " at ", address_));
}

}  // namespace dflow::dist

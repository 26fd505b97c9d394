// A connection from this process to one task's server: a DEALER socket with
// request ids, per-request deadlines and heartbeats. Callers send on their
// own thread (the socket is used under a mutex); one I/O thread receives,
// woken by the socket's ZMQ_FD, and sends the heartbeats.
// Every request ends in exactly one call of its callback: the reply, or an
// error when its deadline passes, when the task stops answering (no message
// for kHeartbeatTimeoutMs while heartbeats go out every kHeartbeatIntervalMs),
// or when the channel closes. Errors name the task and its address. A watch
// is a request that was never sent: it ends by the same errors, or unwatched.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dist/transport/curve.h"
#include "dist/transport/zmq_transport.h"

namespace dflow::dist {

struct ChannelOptions {
  int heartbeat_interval_ms = kHeartbeatIntervalMs;
  int heartbeat_timeout_ms = kHeartbeatTimeoutMs;
  // CURVE keys (dist/transport/curve.h): null takes the process's; `plaintext`
  // connects without any.
  const TransportKeys* keys = nullptr;
  bool plaintext = false;
};

class Channel {
 public:
  // Called on the channel's I/O thread; it must not block.
  using Done = std::function<void(std::optional<Error> error, Message reply)>;

  // `task` names the peer in errors ("/job:worker/replica:0/task:1").
  Channel(std::string task, std::string address, ChannelOptions options = {});
  // Fails what is still pending with kCancelled; closes without lingering.
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Sends `request` (its request_id is assigned here) and calls `done` once.
  void Call(Message request, Done done);
  // Call, then wait: returns the reply, throws its error.
  Message CallAndWait(Message request);
  // Sends and forgets: the reply, if any, is dropped. False when it could
  // not be queued (the channel is closed, or the message would not encode).
  bool Post(Message request);
  // Watches the task without sending anything: `done` is called with the
  // error a request of type `what` would get once the task has been silent
  // for the heartbeat timeout (or the channel closes), unless Unwatch(id)
  // took it first. For a wait on something the task sends by itself.
  uint64_t Watch(MessageType what, Done done);
  // Forgets a watch; its `done` is not called afterwards (but may be running).
  void Unwatch(uint64_t id) { TakePending(id); }

  const std::string& task() const { return task_; }
  const std::string& address() const { return address_; }
  // False once the task has said nothing for the heartbeat timeout.
  bool peer_alive() const { return peer_alive_; }

 private:
  struct Pending {
    MessageType type;
    Done done;
    int64_t deadline_ms;
    std::chrono::steady_clock::time_point sent_at;
  };
  using Clock = std::chrono::steady_clock;

  void Loop();
  // Sends under socket_mu_; false when the socket would block. `expect_reply`:
  // see whether one already came (ZMQ_FD is edge-triggered; see the .cc).
  bool SendNow(const Message& message, bool expect_reply = true);
  std::vector<std::vector<zmq::message_t>> ReceiveAll();
  bool AddPending(uint64_t id, MessageType type, int64_t deadline_ms, Done& done);
  Done TakePending(uint64_t id);
  Error ClosedError() const;
  void Deliver(Message reply);
  void HeartbeatIfDue(Clock::time_point now);
  void FailExpired(Clock::time_point now);
  void FailAll(const Error& error);
  Error PeerError(std::string_view what) const;

  const std::string task_;
  const std::string address_;
  const ChannelOptions options_;
  std::mutex socket_mu_;  // guards socket_: callers send, the I/O thread receives
  zmq::socket_t socket_;
  int socket_fd_ = -1;    // ZMQ_FD: readable when the socket may have news
  Wakeup wakeup_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> peer_alive_{true};
  std::atomic<uint64_t> next_request_id_{1};

  std::mutex mu_;  // guards pending_
  std::map<uint64_t, Pending> pending_;

  Clock::time_point last_heard_;  // I/O thread only
  Clock::time_point next_heartbeat_;
  std::thread io_thread_;
};

// "zmq://host:port" -> "tcp://host:port"; throws naming a bad target.
std::string ZmqEndpointOfTarget(std::string_view target);
// "host:port" -> "tcp://host:port".
std::string ZmqEndpoint(std::string_view address);

}  // namespace dflow::dist

// The serving end of the transport: a ROUTER socket bound to one address and
// served by one I/O thread. Heartbeats are answered on that thread. Every
// other well-formed request goes to the handler, which replies through its
// Respond (from any thread, at any later time; the reply is sent on the
// responding thread, under the socket's mutex, with no hand-off). A message that does not
// decode gets an error reply naming what was wrong, its connection is
// dropped (nothing more from it is served) and the server keeps serving.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>

#include "dist/transport/curve.h"
#include "dist/transport/zmq_transport.h"

namespace dflow::dist {

// When each connection to a server was last heard from (any message,
// heartbeats included). A connection is named by the ROUTER's routing id,
// the `sender` a SenderHandler gets. Shared, so that it can be asked after
// the server stopped (everyone then looks silent).
class ConnectionLiveness {
 public:
  using Clock = std::chrono::steady_clock;
  void Heard(const std::string& sender);
  // Milliseconds since `sender` was last heard; -1 when it never was.
  int64_t MillisSinceHeard(const std::string& sender) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, Clock::time_point> last_heard_;
  Clock::time_point next_prune_ = Clock::now();
};

class MessageServer {
 public:
  // Sends the reply to one request (its request id is filled in). Call once.
  using Respond = std::function<void(Message reply)>;
  // Runs on the I/O thread: it must not block (long work goes elsewhere).
  using Handler = std::function<void(Message request, Respond respond)>;
  // A Handler that also learns which connection sent the request.
  using SenderHandler = std::function<void(Message request, Respond respond, const std::string& sender)>;

  // Binds "host:port" (port 0: any free port); throws kUnavailable naming
  // the address when it cannot.
  // With `keys` (null: the process's, dist/transport/curve.h) the server
  // speaks CURVE; without any it listens in the clear, on loopback only
  // unless DFLOW_INSECURE=1.
  MessageServer(const std::string& address, Handler handler, const TransportKeys* keys = nullptr);
  MessageServer(const std::string& address, SenderHandler handler, const TransportKeys* keys = nullptr);
  ~MessageServer();  // Stop()
  MessageServer(const MessageServer&) = delete;
  MessageServer& operator=(const MessageServer&) = delete;

  // Stops serving; replies sent after this are dropped.
  void Stop();
  int port() const { return port_; }
  int64_t num_bad_messages() const { return num_bad_messages_; }
  std::shared_ptr<const ConnectionLiveness> liveness() const { return liveness_; }

 private:
  struct Socket;
  void Loop();
  void ServeWaiting();
  void ServeOne(std::vector<zmq::message_t>& frames);
  void Reject(const zmq::message_t& routing_id, const std::vector<zmq::message_t>& frames,
              const Error& error);

  SenderHandler handler_;
  std::shared_ptr<ConnectionLiveness> liveness_ = std::make_shared<ConnectionLiveness>();
  std::shared_ptr<Socket> socket_;  // shared with every Respond
  int port_ = 0;
  std::set<std::string> dropped_;  // routing ids of connections that sent garbage
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> num_bad_messages_{0};
  std::thread io_thread_;
};

}  // namespace dflow::dist

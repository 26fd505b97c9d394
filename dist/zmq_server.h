// The serving end of the transport: a ROUTER socket bound to one address and
// served by one I/O thread. Heartbeats are answered on that thread. Every
// other well-formed request goes to the handler, which replies through its
// Respond (from any thread, at any later time). A message that does not
// decode gets an error reply naming what was wrong, its connection is
// dropped (nothing more from it is served) and the server keeps serving.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "dist/zmq_transport.h"

namespace dflow::dist {

class MessageServer {
 public:
  // Sends the reply to one request (its request id is filled in). Call once.
  using Respond = std::function<void(Message reply)>;
  // Runs on the I/O thread: it must not block (long work goes elsewhere).
  using Handler = std::function<void(Message request, Respond respond)>;

  // Binds "host:port" (port 0: any free port); throws kUnavailable naming
  // the address when it cannot.
  MessageServer(const std::string& address, Handler handler);
  ~MessageServer();  // Stop()
  MessageServer(const MessageServer&) = delete;
  MessageServer& operator=(const MessageServer&) = delete;

  // Stops serving; replies sent after this are dropped.
  void Stop();
  int port() const { return port_; }
  int64_t num_bad_messages() const { return num_bad_messages_; }

 private:
  struct Outbox;
  void Loop();
  void ServeWaiting();
  void ServeOne(std::vector<zmq::message_t>& frames);
  void Reject(const zmq::message_t& routing_id, const std::vector<zmq::message_t>& frames,
              const Error& error);
  void SendReplies();

  Handler handler_;
  zmq::socket_t socket_;
  int port_ = 0;
  std::shared_ptr<Outbox> outbox_;
  std::set<std::string> dropped_;  // routing ids of connections that sent garbage
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> num_bad_messages_{0};
  std::thread io_thread_;
};

}  // namespace dflow::dist

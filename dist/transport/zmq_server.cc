#include "dist/transport/zmq_server.h"

#include <mutex>
#include <vector>

namespace dflow::dist {

// The ROUTER socket and what guards it, shared with every Respond, so that
// a reply coming after the server stopped finds `closed` instead of a
// dangling server. The I/O thread receives and any thread sends, each under
// `mu`: a reply made on an executor's thread goes out from there, with no
// hand-off to the I/O thread.
struct MessageServer::Socket {
  std::mutex mu;
  zmq::socket_t socket{ZmqContext(), zmq::socket_type::router};
  bool closed = false;
  Wakeup wakeup;  // wakes the I/O thread: to stop, or for news a send took in
  std::thread::id io_thread;

  // ZMQ_FD is edge-triggered: a send may take in the news that a request
  // came, and then the fd stays quiet. So after a send from another thread,
  // a request already waiting wakes the I/O thread by hand. (The I/O thread
  // itself looks again with its next receive.)
  void Send(const std::string& sender, const Message& reply) {
    zmq::message_t routing_id(sender.data(), sender.size());
    bool request_waiting = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (closed) return;
      try {
        SendMessage(socket, reply, &routing_id);
      } catch (const Error& e) {  // a reply the wire cannot carry: say so instead
        SendMessage(socket, Message::ErrorReply(reply.request_id, e), &routing_id);
      }
      if (std::this_thread::get_id() != io_thread)
        request_waiting = socket.get(zmq::sockopt::events) & ZMQ_POLLIN;
    }
    if (request_waiting) wakeup.Signal();
  }
};

namespace {

int BoundPort(zmq::socket_t& socket) {
  std::string endpoint = socket.get(zmq::sockopt::last_endpoint);
  return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
}

}  // namespace

void ConnectionLiveness::Heard(const std::string& sender) {
  auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  last_heard_[sender] = now;
  // Connections come and go: forget those silent for an hour, once a minute.
  if (now < next_prune_) return;
  next_prune_ = now + std::chrono::minutes(1);
  std::erase_if(last_heard_, [&](const auto& entry) { return now - entry.second > std::chrono::hours(1); });
}

int64_t ConnectionLiveness::MillisSinceHeard(const std::string& sender) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = last_heard_.find(sender);
  if (it == last_heard_.end()) return -1;
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - it->second).count();
}

MessageServer::MessageServer(const std::string& address, Handler handler, const TransportKeys* keys)
    : MessageServer(
          address,
          [handler = std::move(handler)](Message request, Respond respond, const std::string&) {
            handler(std::move(request), std::move(respond));
          },
          keys) {}

MessageServer::MessageServer(const std::string& address, SenderHandler handler, const TransportKeys* keys)
    : handler_(std::move(handler)), socket_(std::make_shared<Socket>()) {
  zmq::socket_t& socket = socket_->socket;
  SetSocketLimits(socket);
  if (!keys) keys = ProcessTransportKeys();
  if (keys) SecureServerSocket(socket, *keys);
  else CheckPlaintextListen(address);
  std::string endpoint = StrCat("tcp://", address);
  try {
    socket.bind(endpoint);
  } catch (const zmq::error_t& e) {
    Fail(Code::kUnavailable, "cannot listen on ", address, ": ", e.what());
  }
  port_ = BoundPort(socket);
  io_thread_ = std::thread([this] { Loop(); });
}

MessageServer::~MessageServer() { Stop(); }

// Closes the socket at once (not when the last Respond goes), so that the
// port is free again.
void MessageServer::Stop() {
  if (stop_.exchange(true)) return;
  socket_->wakeup.Signal();
  io_thread_.join();
  std::lock_guard<std::mutex> lock(socket_->mu);
  socket_->closed = true;
  socket_->socket.close();
}

// Polls the socket's ZMQ_FD directly, as the channel does, which saves
// zmq_poll's extra poll(2) and two ZMQ_EVENTS checks per wakeup. The fd is
// only polled right after a receive found nothing, which re-arms it (sends
// from other threads that take in news wake this thread by hand).
void MessageServer::Loop() {
  int socket_fd;
  {
    std::lock_guard<std::mutex> lock(socket_->mu);
    socket_->io_thread = std::this_thread::get_id();
    socket_fd = socket_->socket.get(zmq::sockopt::fd);
  }
  while (!stop_) {
    ServeWaiting();
    WaitReadable(socket_fd, socket_->wakeup, 100);
  }
}

// Serves every request waiting; the socket's lock is not held while a
// handler runs (its Respond may send at once).
void MessageServer::ServeWaiting() {
  while (!stop_) {
    std::vector<zmq::message_t> frames;
    {
      std::lock_guard<std::mutex> lock(socket_->mu);
      frames = ReceiveFrames(socket_->socket);
    }
    if (frames.empty()) return;
    ServeOne(frames);
  }
}

void MessageServer::ServeOne(std::vector<zmq::message_t>& frames) {
  const zmq::message_t& routing_id = frames[0];  // a ROUTER puts the sender first
  std::string sender = routing_id.to_string();
  if (dropped_.count(sender)) return;
  liveness_->Heard(sender);
  Message request;
  try {
    request = DecodeFrames(frames, 1);
    if (request.type == MessageType::kReply || request.type == MessageType::kError)
      Fail(Code::kInvalidArgument, "bad message: a ", MessageTypeName(request.type),
           " is not a request");
  } catch (const Error& e) {
    return Reject(routing_id, frames, e);
  }
  uint64_t id = request.request_id;
  auto respond = [socket = socket_, sender, id](Message reply) {
    reply.request_id = id;
    socket->Send(sender, reply);
  };
  if (request.deadline_ms && NowMs() > request.deadline_ms)
    return respond(Message::ErrorReply(id, Error(Code::kUnavailable, StrCat(
        MessageTypeName(request.type), " arrived after its deadline"))));
  if (request.type == MessageType::kHeartbeat) return respond(Message());
  try {
    handler_(std::move(request), respond, sender);
  } catch (const Error& e) {
    respond(Message::ErrorReply(id, e));
  } catch (const std::exception& e) {
    respond(Message::ErrorReply(id, Error(Code::kInternal, e.what())));
  }
}

void MessageServer::Reject(const zmq::message_t& routing_id,
                           const std::vector<zmq::message_t>& frames, const Error& error) {
  ++num_bad_messages_;
  uint64_t id = 0;
  if (frames.size() > 1)
    id = PeekRequestId({static_cast<const std::byte*>(frames[1].data()), frames[1].size()}).value_or(0);
  Error dropped(error.code(), StrCat(error.message(), "; the connection is dropped"));
  socket_->Send(routing_id.to_string(), Message::ErrorReply(id, dropped));
  dropped_.insert(routing_id.to_string());
}

}  // namespace dflow::dist

#include "dist/zmq_server.h"

#include <mutex>
#include <vector>

namespace dflow::dist {

// Replies waiting for the I/O thread. Shared with every Respond, so a reply
// that comes after the server stopped finds `closed` instead of a dangling
// server. A reply made on the I/O thread itself (a handler that answers at
// once) wakes nobody: the loop sends it as soon as the handler returns, so
// it costs no eventfd write and no extra turn of the poll loop.
struct MessageServer::Outbox {
  std::mutex mu;
  std::vector<std::pair<std::string, Message>> replies;  // (routing id, reply)
  Wakeup wakeup;
  std::thread::id io_thread;
  bool closed = false;

  void Push(std::string routing_id, Message reply) {
    bool on_io_thread;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (closed) return;
      replies.emplace_back(std::move(routing_id), std::move(reply));
      on_io_thread = std::this_thread::get_id() == io_thread;
    }
    if (!on_io_thread) wakeup.Signal();
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

MessageServer::MessageServer(const std::string& address, Handler handler)
    : MessageServer(address, [handler = std::move(handler)](Message request, Respond respond,
                                                          const std::string&) {
        handler(std::move(request), std::move(respond));
      }) {}

MessageServer::MessageServer(const std::string& address, SenderHandler handler)
    : handler_(std::move(handler)),
      socket_(ZmqContext(), zmq::socket_type::router),
      outbox_(std::make_shared<Outbox>()) {
  SetSocketLimits(socket_);
  std::string endpoint = StrCat("tcp://", address);
  try {
    socket_.bind(endpoint);
  } catch (const zmq::error_t& e) {
    Fail(Code::kUnavailable, "cannot listen on ", address, ": ", e.what());
  }
  port_ = BoundPort(socket_);
  io_thread_ = std::thread([this] { Loop(); });
}

MessageServer::~MessageServer() { Stop(); }

void MessageServer::Stop() {
  if (stop_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(outbox_->mu);
    outbox_->closed = true;
  }
  outbox_->wakeup.Signal();
  io_thread_.join();
}

// Polls the socket's ZMQ_FD directly, as the channel does, which saves
// zmq_poll's two ZMQ_EVENTS checks per wakeup. ZMQ_FD only says that the
// socket has news, and a send may take the news in, so the fd is polled only
// right after a receive found nothing (which re-arms it) with no send since.
void MessageServer::Loop() {
  {
    std::lock_guard<std::mutex> lock(outbox_->mu);
    outbox_->io_thread = std::this_thread::get_id();
  }
  int socket_fd = socket_.get(zmq::sockopt::fd);
  while (!stop_) {
    SendReplies();  // from other threads
    ServeWaiting();
    WaitReadable(socket_fd, outbox_->wakeup, 100);
  }
}

// Serves every request waiting; what a handler answers at once goes out
// before the next request is read.
void MessageServer::ServeWaiting() {
  while (!stop_) {
    std::vector<zmq::message_t> frames = ReceiveFrames(socket_);
    if (frames.empty()) return;
    ServeOne(frames);
    SendReplies();
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
  auto respond = [outbox = outbox_, sender, id](Message reply) {
    reply.request_id = id;
    outbox->Push(sender, std::move(reply));
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
  SendMessage(socket_, Message::ErrorReply(id, dropped), &routing_id);
  dropped_.insert(routing_id.to_string());
}

void MessageServer::SendReplies() {
  std::vector<std::pair<std::string, Message>> replies;
  {
    std::lock_guard<std::mutex> lock(outbox_->mu);
    replies.swap(outbox_->replies);
  }
  for (auto& [sender, reply] : replies) {
    zmq::message_t routing_id(sender.data(), sender.size());
    try {
      SendMessage(socket_, reply, &routing_id);
    } catch (const Error& e) {  // a reply the wire cannot carry: say so instead
      SendMessage(socket_, Message::ErrorReply(reply.request_id, e), &routing_id);
    }
  }
}

}  // namespace dflow::dist

#include "dist/zmq_rendezvous.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "dist/cluster.h"
#include "graph/device.h"

namespace dflow::dist {

std::string TaskOfDevice(const std::string& device) {
  DeviceName name = DeviceName::Parse(device);
  if (name.job.empty() || !name.task)
    Fail(Code::kInvalidArgument, "device '", device, "' names no job and task");
  return ClusterSpec::TaskPrefix({name.job, *name.task});
}

std::string KeyToJson(const RendezvousKey& key) {
  nlohmann::json doc = {{"send_device", key.send_device},
                        {"send_device_incarnation", key.send_device_incarnation},
                        {"recv_device", key.recv_device},
                        {"tensor_name", key.tensor_name},
                        {"step_id", key.step_id}};
  return doc.dump();
}

RendezvousKey KeyFromJson(const std::string& text) {
  try {
    nlohmann::json doc = nlohmann::json::parse(text);
    return {doc.at("send_device").get<std::string>(), doc.at("send_device_incarnation").get<int64_t>(),
            doc.at("recv_device").get<std::string>(), doc.at("tensor_name").get<std::string>(),
            doc.at("step_id").get<int64_t>()};
  } catch (const nlohmann::json::exception& e) {
    Fail(Code::kInvalidArgument, "bad RecvTensor key: ", e.what());
  }
}

ZmqRendezvous::ZmqRendezvous(std::string task_prefix, int64_t incarnation, PeerChannels peers)
    : task_prefix_(std::move(task_prefix)), device_prefix_(task_prefix_ + "/device:"),
      incarnation_(incarnation), peers_(std::move(peers)) {}

// A string test, not a parse: this runs for every tensor.
bool ZmqRendezvous::IsLocal(const std::string& device) const { return device.starts_with(device_prefix_); }

ZmqRendezvous::~ZmqRendezvous() {
  AbortFromPeer(Error(Code::kCancelled, StrCat("task ", task_prefix_, ": the step's rendezvous was "
                                               "destroyed while a Recv was waiting")));
}

void ZmqRendezvous::Send(const RendezvousKey& key, Tensor value) { local_.Send(key, std::move(value)); }

void ZmqRendezvous::RecvAsync(const RendezvousKey& key, RecvDone done) {
  if (IsLocal(key.send_device)) return local_.RecvAsync(key, std::move(done));
  RecvFromPeer(key, std::move(done));
}

void ZmqRendezvous::RecvFromPeer(const RendezvousKey& key, RecvDone done) {
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto error = local_.abort_error()) {
      done(error, Tensor());
      return;
    }
    id = next_remote_++;
    remote_recvs_.emplace(id, std::move(done));
  }
  Message request;
  request.type = MessageType::kRecvTensor;
  request.text = KeyToJson(key);
  Channel& channel = peers_(TaskOfDevice(key.send_device));
  // The reply may come after the step ended and this rendezvous is gone.
  std::weak_ptr<ZmqRendezvous> weak = weak_from_this();
  channel.Call(std::move(request), [weak, id, key](std::optional<Error> error, Message reply) {
    std::shared_ptr<ZmqRendezvous> self = weak.lock();
    if (!self) return;
    self->OnPeerReply(id, key, std::move(error), std::move(reply));
  });
}

void ZmqRendezvous::OnPeerReply(uint64_t id, const RendezvousKey& key, std::optional<Error> error,
                                Message reply) {
  RecvDone waiting = TakeRemote(id);
  if (!waiting) return;
  if (!error && reply.tensors.size() != 1)
    error = Error(Code::kInternal, StrCat("RecvTensor reply for ", key.ToString(), " has ",
                                          reply.tensors.size(), " tensors"));
  if (error) {
    AbortFromPeer(*error);
    return waiting(local_.abort_error(), Tensor());
  }
  waiting(std::nullopt, std::move(reply.tensors[0].value));
}

Rendezvous::RecvDone ZmqRendezvous::TakeRemote(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = remote_recvs_.find(id);
  if (it == remote_recvs_.end()) return nullptr;
  RecvDone done = std::move(it->second);
  remote_recvs_.erase(it);
  return done;
}

void ZmqRendezvous::StartAbort(const Error& error) {
  AbortFromPeer(Error(error.code(), StrCat("task ", task_prefix_, ": ", error.message())));
}

void ZmqRendezvous::AbortFromPeer(const Error& error) {
  // The local table first, outside our lock (its callbacks may call back
  // here); a RecvFromPeer that misses the drain below then sees the error.
  local_.StartAbort(error);
  std::vector<RecvDone> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, done] : remote_recvs_) waiting.push_back(std::move(done));
    remote_recvs_.clear();
  }
  std::optional<Error> first = local_.abort_error();
  for (RecvDone& done : waiting) done(first, Tensor());
}

void ZmqRendezvous::ServeRecv(const RendezvousKey& key, RecvDone done) {
  if (!IsLocal(key.send_device))
    return done(Error(Code::kInvalidArgument, StrCat("task ", task_prefix_, " was asked for ",
                                                     key.ToString(), ", which another task sends")),
                Tensor());
  if (key.send_device_incarnation != incarnation_)
    return done(Error(Code::kFailedPrecondition,
                      StrCat("task ", task_prefix_, " was asked for ", key.ToString(),
                             " of incarnation ", key.send_device_incarnation, ", but it is incarnation ",
                             incarnation_, " (the task restarted: start a new session)")),
                Tensor());
  local_.RecvAsync(key, std::move(done));
}

}  // namespace dflow::dist

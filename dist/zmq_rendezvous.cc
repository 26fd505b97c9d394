#include "dist/zmq_rendezvous.h"

#include <cstring>
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

namespace {

// RecvTensor's key, little-endian: for each string field a u16 length and its
// bytes, for each number an i64. A fixed layout read field by field (no JSON
// parser on the path of every tensor; nlohmann's parse was ~9 us of a 4-byte
// Recv's ~100 us round trip).
void AppendString(std::string& out, const std::string& field, const char* name) {
  if (field.size() > kMaxTensorNameBytes)
    Fail(Code::kInvalidArgument, "rendezvous key field '", name, "' has ", field.size(),
         " bytes, the limit is ", kMaxTensorNameBytes);
  auto length = static_cast<uint16_t>(field.size());
  out.append(reinterpret_cast<const char*>(&length), sizeof(length));
  out += field;
}

void AppendNumber(std::string& out, int64_t value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// Reads the fields in order; every read checks what is left first.
class KeyReader {
 public:
  explicit KeyReader(std::string_view text) : text_(text) {}
  std::string String(const char* name) {
    uint16_t length;
    Take(&length, sizeof(length), name);
    if (length > kMaxTensorNameBytes) Bad(name, "' has length ", length, ", the limit is ", kMaxTensorNameBytes);
    if (text_.size() - at_ < length) Bad(name, "' is cut short");
    std::string value(text_.substr(at_, length));
    at_ += length;
    return value;
  }
  int64_t Number(const char* name) {
    int64_t value;
    Take(&value, sizeof(value), name);
    return value;
  }
  void End() {
    if (at_ != text_.size()) Fail(Code::kInvalidArgument, "bad RecvTensor key: ", text_.size() - at_, " trailing bytes");
  }

 private:
  [[noreturn]] void Bad(const char* name, const auto&... what) {
    Fail(Code::kInvalidArgument, "bad RecvTensor key: field '", name, what...);
  }
  void Take(void* out, size_t bytes, const char* name) {
    if (text_.size() - at_ < bytes) Bad(name, "' is cut short");
    std::memcpy(out, text_.data() + at_, bytes);
    at_ += bytes;
  }
  std::string_view text_;
  size_t at_ = 0;
};

}  // namespace

std::string KeyToWire(const RendezvousKey& key) {
  std::string out;
  out.reserve(3 * 2 + 2 * 8 + key.send_device.size() + key.recv_device.size() + key.tensor_name.size());
  AppendString(out, key.send_device, "send_device");
  AppendNumber(out, key.send_device_incarnation);
  AppendString(out, key.recv_device, "recv_device");
  AppendString(out, key.tensor_name, "tensor_name");
  AppendNumber(out, key.step_id);
  return out;
}

RendezvousKey KeyFromWire(std::string_view text) {
  KeyReader reader(text);
  RendezvousKey key;
  key.send_device = reader.String("send_device");
  key.send_device_incarnation = reader.Number("send_device_incarnation");
  key.recv_device = reader.String("recv_device");
  key.tensor_name = reader.String("tensor_name");
  key.step_id = reader.Number("step_id");
  reader.End();
  return key;
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
  request.text = KeyToWire(key);
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

#include "dist/runtime/zmq_rendezvous.h"

#include <cstring>

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

// SendTensor's key, little-endian: for each string field a u16 length and its
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
    if (at_ != text_.size()) Fail(Code::kInvalidArgument, "bad rendezvous key: ", text_.size() - at_, " trailing bytes");
  }

 private:
  [[noreturn]] void Bad(const char* name, const auto&... what) {
    Fail(Code::kInvalidArgument, "bad rendezvous key: field '", name, what...);
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

std::string ZmqRendezvous::TaskOf(const std::string& device) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = task_of_.find(device); it != task_of_.end()) return it->second;
  }
  std::string task = TaskOfDevice(device);  // may throw: not cached then
  std::lock_guard<std::mutex> lock(mu_);
  return task_of_.emplace(device, std::move(task)).first->second;
}

ZmqRendezvous::~ZmqRendezvous() {
  AbortFromPeer(Error(Code::kCancelled, StrCat("task ", task_prefix_, ": the step's rendezvous was "
                                               "destroyed while a Recv was waiting")));
  for (auto& [task, watch] : watches_)
    if (watch.first) watch.first->Unwatch(watch.second);
}

void ZmqRendezvous::Send(const RendezvousKey& key, Tensor value) {
  if (IsLocal(key.recv_device)) return local_.Send(key, std::move(value));
  PushToPeer(key, std::move(value));
}

void ZmqRendezvous::PushToPeer(const RendezvousKey& key, Tensor value) {
  if (auto error = local_.abort_error()) throw *error;
  if (key.send_device_incarnation != incarnation_)
    Fail(Code::kFailedPrecondition, "task ", task_prefix_, " (incarnation ", incarnation_, ") cannot send ",
         key.ToString(), ": the key is for incarnation ", key.send_device_incarnation);
  Message push;
  push.type = MessageType::kSendTensor;
  push.text = KeyToWire(key);
  push.tensors.push_back({"value", std::move(value)});
  Channel& channel = peers_(TaskOf(key.recv_device));
  if (channel.Post(std::move(push))) return;
  Error error(Code::kUnavailable, StrCat("cannot queue ", key.ToString(), " for task ", channel.task(), " at ",
                                         channel.address()));
  StartAbort(error);
  throw *abort_error();
}

void ZmqRendezvous::RecvAsync(const RendezvousKey& key, RecvDone done) {
  if (!IsLocal(key.send_device)) WatchPeer(TaskOf(key.send_device));
  local_.RecvAsync(key, std::move(done));
}

// One watch per peer task for the rest of the step: its heartbeats failing
// aborts the step (and so the Recvs waiting for it). A peer that dies after
// its last tensor came fails the step too, as its own RunStep does.
void ZmqRendezvous::WatchPeer(const std::string& task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!watches_.try_emplace(task, nullptr, 0).second) return;
  }
  // Outside the lock: a closed channel calls back at once, and the abort
  // runs Recv callbacks, which may Recv again.
  Channel* found;
  try {
    found = &peers_(task);
  } catch (...) {  // no channel to the task (not in the cluster): the next Recv tries again
    std::lock_guard<std::mutex> lock(mu_);
    watches_.erase(task);
    throw;
  }
  Channel& channel = *found;
  std::weak_ptr<ZmqRendezvous> weak = weak_from_this();
  uint64_t id = channel.Watch(MessageType::kSendTensor, [weak](std::optional<Error> error, Message) {
    if (std::shared_ptr<ZmqRendezvous> self = weak.lock(); self && error) self->AbortFromPeer(*error);
  });
  std::lock_guard<std::mutex> lock(mu_);
  watches_[task] = {&channel, id};
}

void ZmqRendezvous::DeliverFromPeer(const RendezvousKey& key, Tensor value) {
  if (local_.abort_error()) return;  // the step ended here; nobody waits for it
  try {
    if (!IsLocal(key.recv_device))
      Fail(Code::kInvalidArgument, "task ", task_prefix_, " was sent ", key.ToString(),
           ", which is for another task");
    local_.Send(key, std::move(value));
  } catch (const Error& e) {
    if (!local_.abort_error()) StartAbort(e);
  }
}

void ZmqRendezvous::StartAbort(const Error& error) {
  AbortFromPeer(Error(error.code(), StrCat("task ", task_prefix_, ": ", error.message())));
}

void ZmqRendezvous::AbortFromPeer(const Error& error) { local_.StartAbort(error); }

}  // namespace dflow::dist

// The rendezvous of one step on one task of a cluster (TensorFlow's model):
// a _Send leaves its tensor in this task's own table; a _Recv whose sender is
// on another task asks that task for the key (a RecvTensor request), and the
// reply comes once the tensor was sent there. An abort fails what waits here,
// and reaches other tasks through their failed RecvTensor replies and the
// client's AbortStep. Errors that start here are tagged with this task, so
// the client learns each error's origin.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "dist/rendezvous.h"
#include "dist/zmq_channel.h"

namespace dflow::dist {

// The channel to another task, by its prefix "/job:worker/replica:0/task:1".
using PeerChannels = std::function<Channel&(const std::string& task_prefix)>;

// Always held by a shared_ptr: a peer's late reply must find it gone, not dangling.
class ZmqRendezvous final : public Rendezvous,
                            public std::enable_shared_from_this<ZmqRendezvous> {
 public:
  ZmqRendezvous(std::string task_prefix, int64_t incarnation, PeerChannels peers);
  ~ZmqRendezvous() override;

  void Send(const RendezvousKey& key, Tensor value) override;
  void RecvAsync(const RendezvousKey& key, RecvDone done) override;
  // Tags `error` with this task ("task /job:...: message"), then aborts.
  void StartAbort(const Error& error) override;
  std::optional<Error> abort_error() const override { return local_.abort_error(); }

  // Aborts with an error that came from elsewhere and already names its origin.
  void AbortFromPeer(const Error& error);
  // Serves another task's RecvTensor for a tensor this task sends.
  void ServeRecv(const RendezvousKey& key, RecvDone done);

 private:
  void RecvFromPeer(const RendezvousKey& key, RecvDone done);
  void OnPeerReply(uint64_t id, const RendezvousKey& key, std::optional<Error> error, Message reply);
  // Takes the waiting remote Recv `id`, if nobody else (reply or abort) has.
  RecvDone TakeRemote(uint64_t id);

  bool IsLocal(const std::string& device) const;  // on this task?

  const std::string task_prefix_;
  const std::string device_prefix_;  // task_prefix_ + "/device:"
  const int64_t incarnation_;
  PeerChannels peers_;
  LocalRendezvous local_;
  std::mutex mu_;
  std::map<uint64_t, RecvDone> remote_recvs_;  // Recvs waiting on another task
  uint64_t next_remote_ = 0;
};

// The task prefix of a full device name: "/job:w/replica:0/task:1".
std::string TaskOfDevice(const std::string& device);

// A rendezvous key as RecvTensor's text, and back (validated field by field
// before anything is allocated; a bad one throws kInvalidArgument naming the field).
std::string KeyToWire(const RendezvousKey& key);
RendezvousKey KeyFromWire(std::string_view text);

}  // namespace dflow::dist

// The rendezvous of one step on one task of a cluster. A _Send whose _Recv
// is on this task leaves its tensor in this task's table; one whose _Recv is
// on another task pushes it there at once (a SendTensor message, no reply),
// where it waits in that task's table for its Recv. So a tensor crosses the
// wire as one message, as soon as it exists, and nobody asks for it.
// Once a Recv waits for another task's tensor, the step watches that task
// through the channel's heartbeats: if it dies or stops before the step
// ends, the step aborts here, naming it.
// Errors that start here are tagged with this task, so the client learns each
// error's origin; the client's AbortStep carries it to the other tasks.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "dist/transport/zmq_channel.h"
#include "graph/local_rendezvous.h"

namespace dflow::dist {

// The channel to another task, by its prefix "/job:worker/replica:0/task:1".
using PeerChannels = std::function<Channel&(const std::string& task_prefix)>;

// Always held by a shared_ptr: a channel's late callback must find it gone,
// not dangling. The channels must outlive it.
class ZmqRendezvous final : public Rendezvous,
                            public std::enable_shared_from_this<ZmqRendezvous> {
 public:
  ZmqRendezvous(std::string task_prefix, int64_t incarnation, PeerChannels peers);
  ~ZmqRendezvous() override;

  // Never blocks. A tensor for another task is queued on its channel; one
  // that cannot be queued aborts the step (and throws, as after an abort).
  void Send(const RendezvousKey& key, Tensor value) override;
  void RecvAsync(const RendezvousKey& key, RecvDone done) override;
  // Tags `error` with this task ("task /job:...: message"), then aborts.
  void StartAbort(const Error& error) override;
  std::optional<Error> abort_error() const override { return local_.abort_error(); }

  // Aborts with an error that came from elsewhere and already names its origin.
  void AbortFromPeer(const Error& error);
  // A tensor another task pushed here (its SendTensor). One that is not for
  // this task, or sent twice, aborts the step naming it; after an abort it is dropped.
  void DeliverFromPeer(const RendezvousKey& key, Tensor value);

 private:
  void PushToPeer(const RendezvousKey& key, Tensor value);
  void WatchPeer(const std::string& task);

  bool IsLocal(const std::string& device) const;  // on this task?
  // TaskOfDevice, remembered: a parse per tensor showed in the round trip.
  std::string TaskOf(const std::string& device);

  const std::string task_prefix_;
  const std::string device_prefix_;  // task_prefix_ + "/device:"
  const int64_t incarnation_;
  PeerChannels peers_;
  LocalRendezvous local_;
  std::mutex mu_;  // guards watches_ and task_of_
  std::map<std::string, std::pair<Channel*, uint64_t>> watches_;  // by task: Channel::Watch's id
  std::unordered_map<std::string, std::string> task_of_;          // device -> task prefix
};

// The task prefix of a full device name: "/job:w/replica:0/task:1".
std::string TaskOfDevice(const std::string& device);

// A rendezvous key as SendTensor's text, and back (validated field by field
// before anything is allocated; a bad one throws kInvalidArgument naming the field).
std::string KeyToWire(const RendezvousKey& key);
RendezvousKey KeyFromWire(std::string_view text);

}  // namespace dflow::dist

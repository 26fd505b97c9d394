// The rendezvous: where a _Send leaves a tensor and the matching _Recv picks
// it up, in the same process or across a socket. A step's partitions share
// one; the executor carries it in each kernel's StepContext and aborts it on
// the step's first error, so every partition waiting on it wakes up.
//
// The executor and the step runner hand it around and abort it; the
// implementations are LocalRendezvous (graph/local_rendezvous.h), which joins
// the partitions of one process, and ZmqRendezvous (dist/runtime/zmq_rendezvous.h),
// which also pushes tensors to other processes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "graph/status.h"
#include "graph/tensor.h"

namespace dflow {

// Names one tensor crossing one cut edge in one step. The incarnation is the
// sending device's process's random start number: a restarted process never
// takes a tensor meant for its predecessor.
struct RendezvousKey {
  std::string send_device;
  int64_t send_device_incarnation = 1;
  std::string recv_device;
  std::string tensor_name;  // "node:index", or "^node" for a control edge
  int64_t step_id = 0;

  // "send;incarnation;recv;tensor;step", unique per key.
  std::string ToString() const;
};

class Rendezvous {
 public:
  // Called once with the tensor, or with the error that aborted the step.
  using RecvDone = std::function<void(std::optional<Error> error, Tensor value)>;

  virtual ~Rendezvous() = default;

  // Never blocks. Throws kInvalidArgument for a key sent twice, and the abort
  // error once the rendezvous was aborted.
  virtual void Send(const RendezvousKey& key, Tensor value) = 0;
  // Calls `done` when the tensor for `key` is there: at once when it already
  // is, else from the thread of the matching Send (or of StartAbort). `done`
  // must not block.
  virtual void RecvAsync(const RendezvousKey& key, RecvDone done) = 0;
  // Fails every pending and later RecvAsync and Send with `error`. Only the
  // first call counts: its error is the step's origin.
  virtual void StartAbort(const Error& error) = 0;
  // The error of the first StartAbort, if any.
  virtual std::optional<Error> abort_error() const = 0;
};

}  // namespace dflow

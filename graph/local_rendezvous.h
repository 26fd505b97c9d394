// Rendezvous implementations (the interface is graph/rendezvous.h, where the
// executor can carry it). LocalRendezvous joins the partitions of one step
// inside one process: a table from key to either a sent tensor waiting for
// its Recv, or a Recv callback waiting for its tensor.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "graph/rendezvous.h"

namespace dflow {

class LocalRendezvous final : public Rendezvous {
 public:
  LocalRendezvous() = default;
  // Aborts whatever still waits, so no callback is lost.
  ~LocalRendezvous() override;

  void Send(const RendezvousKey& key, Tensor value) override;
  void RecvAsync(const RendezvousKey& key, RecvDone done) override;
  void StartAbort(const Error& error) override;
  std::optional<Error> abort_error() const override;

  // Keys sent but not yet received plus Recvs still waiting (for tests).
  size_t num_pending() const;

 private:
  // One key's state: the tensor when Send came first, the callback when
  // RecvAsync did. `sent` stays set after the hand-off to catch a second Send.
  struct Slot {
    std::optional<Tensor> value;
    RecvDone waiting;
    bool sent = false;
    bool received = false;
  };

  mutable std::mutex mu_;
  std::unordered_map<std::string, Slot> slots_;  // by key.ToString()
  std::optional<Error> abort_error_;
};

}  // namespace dflow

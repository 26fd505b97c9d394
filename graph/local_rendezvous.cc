#include "graph/local_rendezvous.h"

#include <vector>

namespace dflow {

LocalRendezvous::~LocalRendezvous() {
  StartAbort(Error(Code::kCancelled, "rendezvous destroyed while a Recv was waiting"));
}

void LocalRendezvous::Send(const RendezvousKey& key, Tensor value) {
  RecvDone waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (abort_error_) throw *abort_error_;
    Slot& slot = slots_[key.ToString()];
    if (slot.sent) Fail(Code::kInvalidArgument, "rendezvous key sent twice: ", key.ToString());
    slot.sent = true;
    if (!slot.waiting) {
      slot.value = std::move(value);
      return;
    }
    waiting = std::move(slot.waiting);
    slot.waiting = nullptr;
  }
  // Outside the lock: the callback may Send or Recv itself.
  waiting(std::nullopt, std::move(value));
}

void LocalRendezvous::RecvAsync(const RendezvousKey& key, RecvDone done) {
  std::optional<Error> error;
  Tensor value;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = slots_[key.ToString()];
    if (abort_error_) {
      error = abort_error_;
    } else if (slot.received) {
      error = Error(Code::kInvalidArgument, StrCat("rendezvous key received twice: ", key.ToString()));
    } else if (slot.value) {
      value = std::move(*slot.value);
      slot.value.reset();
    } else {
      slot.received = true;
      slot.waiting = std::move(done);
      return;
    }
    slot.received = true;
  }
  done(std::move(error), std::move(value));
}

void LocalRendezvous::StartAbort(const Error& error) {
  std::vector<RecvDone> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (abort_error_) return;
    abort_error_ = error;
    for (auto& [key, slot] : slots_) {
      if (slot.waiting) waiting.push_back(std::move(slot.waiting));
      slot.waiting = nullptr;
      slot.value.reset();
    }
  }
  for (RecvDone& done : waiting) done(error, Tensor());
}

std::optional<Error> LocalRendezvous::abort_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return abort_error_;
}

size_t LocalRendezvous::num_pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t pending = 0;
  for (const auto& [key, slot] : slots_) pending += slot.value.has_value() || slot.waiting != nullptr;
  return pending;
}

}  // namespace dflow

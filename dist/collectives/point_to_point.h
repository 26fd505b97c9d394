// The point-to-point link the collectives are written against: send bytes to
// a rank under a tag, receive from a rank under a tag before a deadline. The
// in-process link (in_process_link.h) joins threads; a ZeroMQ link can join
// processes behind the same interface.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dflow::dist {

using Bytes = std::vector<uint8_t>;
using Deadline = std::chrono::steady_clock::time_point;

class PointToPoint {
 public:
  virtual ~PointToPoint() = default;

  virtual int rank() const = 0;
  virtual int num_ranks() const = 0;
  // Queues `bytes` for rank `to` under `tag` and returns without waiting for
  // the receiver. Messages from one rank under one tag arrive in order.
  virtual void Send(int to, const std::string& tag, Bytes bytes) = 0;
  // The next message from `from` under `tag`. Throws kUnavailable naming
  // both ranks and the tag when none arrives by `deadline`.
  virtual Bytes Recv(int from, const std::string& tag, Deadline deadline) = 0;
  // A rank the link knows to be gone (it stopped answering), if any: no
  // collective can finish then, so waiting for the others is pointless.
  virtual std::optional<int> LostRank() const { return std::nullopt; }
  // Collective, once at the end, before the process exits: returns when
  // every rank has called it and everything any rank sent was delivered, so
  // that no rank's exit cuts off another's last messages. No Send or Recv after.
  virtual void Shutdown(Deadline /*deadline*/) {}
};

}  // namespace dflow::dist

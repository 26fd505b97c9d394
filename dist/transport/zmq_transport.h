// What the ZeroMQ client (dist/transport/zmq_channel.h) and server (dist/transport/zmq_server.h)
// share: the process's ZeroMQ context, sending a Message as frames (tensor
// frames point at the tensor's buffer: no copy), receiving one, socket
// options, and the eventfd that wakes an I/O thread when work is queued.
#pragma once

#include <vector>
#include <zmq.hpp>

#include "dist/transport/wire.h"

namespace dflow::dist {

// Heartbeats and the limits every socket gets.
inline constexpr int kHeartbeatIntervalMs = 1000;
inline constexpr int kHeartbeatTimeoutMs = 3000;

// The process's context; never destroyed (zmq_ctx_term would wait for every
// socket, and a static destructor must not hang the exit).
zmq::context_t& ZmqContext();

// libzmq mallocs a fresh buffer for every frame it receives. With glibc's
// defaults a process receiving MB-sized tensors keeps handing the freed
// buffers back to the kernel (heaps are trimmed once a few MB at their top
// are free) and then faults every page of the next buffer back in: 10-30% of
// all pages received, and most of the run-to-run swing in transfer speed.
// This keeps freed heap memory up to kKeptFreeBytes and serves allocations
// below kHeapAllocationLimit from the heap instead of from fresh mmaps.
// Process-wide, so a library never calls it by itself: dflow's own programs
// (dflow, dflow-count, the benchmarks) call it first thing in main.
inline constexpr int kKeptFreeBytes = 256 << 20;
inline constexpr int kHeapAllocationLimit = 32 << 20;  // glibc's largest mmap threshold
void KeepFreedMemoryForReceives();

// ZMQ_MAXMSGSIZE (no frame over kMaxFrameBytes), no lingering on close.
void SetSocketLimits(zmq::socket_t& socket);

// Sends `message`, after `routing_id` when given (a ROUTER's reply). Returns
// false when the socket would block (its queue is full).
bool SendMessage(zmq::socket_t& socket, const Message& message,
                 const zmq::message_t* routing_id = nullptr);

// Receives every frame of one message without blocking; empty when none.
std::vector<zmq::message_t> ReceiveFrames(zmq::socket_t& socket);

// Tensor frames at least this big whose bytes sit at Tensor::kMinAdoptedAlignment
// are not copied: the tensor keeps libzmq's frame (allocated for it alone).
// Smaller frames may share libzmq's receive batch buffer and are copied.
inline constexpr size_t kAdoptFrameMinBytes = size_t{64} << 10;

// Decodes frames[first...] (validated; throws kInvalidArgument). Large tensor
// frames are moved into their tensors (see kAdoptFrameMinBytes).
Message DecodeFrames(std::vector<zmq::message_t>& frames, size_t first);

class Wakeup;
// Waits until a socket's ZMQ_FD or `wakeup` is readable, or `timeout_ms`
// passes; true when the wakeup fired (it is drained). One poll(2) call:
// zmq_poll makes a non-blocking one first on every call.
bool WaitReadable(int socket_fd, Wakeup& wakeup, int timeout_ms);

// An eventfd that one thread polls and any thread signals.
class Wakeup {
 public:
  Wakeup();
  ~Wakeup();
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;
  void Signal();
  void Drain();
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace dflow::dist

#include "dist/transport/zmq_transport.h"

#include <malloc.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dflow::dist {

zmq::context_t& ZmqContext() {
  static auto* context = new zmq::context_t(1);
  return *context;
}

void KeepFreedMemoryForReceives() {
  // Setting either threshold also turns off glibc's adjusting them on its own.
  mallopt(M_MMAP_THRESHOLD, kHeapAllocationLimit);
  mallopt(M_TRIM_THRESHOLD, kKeptFreeBytes);
}

void SetSocketLimits(zmq::socket_t& socket) {
  socket.set(zmq::sockopt::maxmsgsize, kMaxFrameBytes);
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::sndhwm, 0);  // queue what the peer has not taken yet
  socket.set(zmq::sockopt::rcvhwm, 0);
}

namespace {

// Frees a sent tensor frame: the Tensor handle kept its buffer alive.
void ReleaseTensor(void* /*data*/, void* hint) { delete static_cast<Tensor*>(hint); }

// Below this a tensor frame is copied into the message: libzmq's encoder
// copies messages smaller than its 8 KB batch into the batch anyway, so a
// zero-copy frame would only add a heap handle, freed on libzmq's I/O thread.
constexpr size_t kZeroCopyFrameMinBytes = 8192;

zmq::message_t ToZmq(OutFrame& frame) {
  if (!frame.tensor.valid()) return zmq::message_t(frame.bytes.data(), frame.bytes.size());
  size_t bytes = frame.tensor.TotalBytes();
  if (bytes == 0) return zmq::message_t();
  if (bytes < kZeroCopyFrameMinBytes) return zmq::message_t(frame.tensor.raw_data(), bytes);
  auto* keep = new Tensor(std::move(frame.tensor));
  return zmq::message_t(keep->raw_data(), bytes, ReleaseTensor, keep);
}

}  // namespace

bool SendMessage(zmq::socket_t& socket, const Message& message, const zmq::message_t* routing_id) {
  std::vector<OutFrame> frames = EncodeMessage(message);
  auto flags = zmq::send_flags::dontwait;
  if (routing_id) {
    zmq::message_t id;
    id.rebuild(routing_id->data(), routing_id->size());
    if (!socket.send(id, flags | zmq::send_flags::sndmore)) return false;
  }
  for (size_t i = 0; i < frames.size(); ++i) {
    zmq::message_t frame = ToZmq(frames[i]);
    // Once the first frame is queued, the rest of a message always is.
    bool more = i + 1 < frames.size();
    if (!socket.send(frame, more ? flags | zmq::send_flags::sndmore : flags)) return false;
  }
  return true;
}

std::vector<zmq::message_t> ReceiveFrames(zmq::socket_t& socket) {
  std::vector<zmq::message_t> frames;
  zmq::message_t frame;
  if (!socket.recv(frame, zmq::recv_flags::dontwait)) return frames;
  frames.push_back(std::move(frame));
  while (frames.back().more()) {
    zmq::message_t next;
    (void)socket.recv(next);  // the rest of a message is already here
    frames.push_back(std::move(next));
  }
  return frames;
}

Message DecodeFrames(std::vector<zmq::message_t>& frames, size_t first) {
  std::vector<std::span<const std::byte>> spans;
  for (size_t i = first; i < frames.size(); ++i)
    spans.emplace_back(static_cast<const std::byte*>(frames[i].data()), frames[i].size());
  // On a loopback transfer of 1 MB tensors copying each one once more costs
  // about a fifth of the receiving CPU time, so a large frame becomes its
  // tensor's buffer; libzmq's frame is closed (from whichever thread drops
  // the last handle) when the tensor goes.
  auto adopt = [&](size_t index, DType dtype, const Shape& shape) -> Tensor {
    zmq::message_t& frame = frames[first + index];
    auto at = reinterpret_cast<uintptr_t>(frame.data());
    if (frame.size() < kAdoptFrameMinBytes || at % Tensor::kMinAdoptedAlignment != 0) return Tensor();
    auto owned = std::make_shared<zmq::message_t>(std::move(frame));
    return Tensor::Adopt(dtype, shape, owned->data(), [owned]() mutable { owned.reset(); });
  };
  return DecodeMessage(spans, adopt);
}

bool WaitReadable(int socket_fd, Wakeup& wakeup, int timeout_ms) {
  pollfd fds[] = {{socket_fd, POLLIN, 0}, {wakeup.fd(), POLLIN, 0}};
  if (::poll(fds, 2, timeout_ms) < 0) return false;  // EINTR: the caller's loop looks again
  if (!(fds[1].revents & POLLIN)) return false;
  wakeup.Drain();
  return true;
}

Wakeup::Wakeup() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0) Fail(Code::kInternal, "eventfd failed: ", std::strerror(errno));
}

Wakeup::~Wakeup() { close(fd_); }

void Wakeup::Signal() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof(one));
}

void Wakeup::Drain() {
  uint64_t count;
  [[maybe_unused]] ssize_t n = read(fd_, &count, sizeof(count));
}

}  // namespace dflow::dist

// The message format between dflow processes. A message is a list of
// ZeroMQ frames: a fixed 36-byte header, a text frame (JSON or an error
// message), a tensor table (name, dtype, shape per tensor), then one frame
// per tensor holding its raw bytes, so a tensor is never copied into a blob.
// DecodeMessage validates every field before it allocates anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"

namespace dflow::dist {

inline constexpr uint32_t kWireMagic = 0x574c4644;  // "DFLW" little-endian
inline constexpr uint16_t kWireVersion = 2;  // 2: tensors are pushed (SendTensor), not asked for
inline constexpr size_t kHeaderBytes = 36;
// Limits a decoder enforces; ZMQ_MAXMSGSIZE caps each frame at kMaxFrameBytes.
inline constexpr int64_t kMaxFrameBytes = int64_t{1} << 32;  // 4 GiB
inline constexpr uint32_t kMaxTextBytes = 256u << 20;
inline constexpr uint32_t kMaxTensors = 1 << 16;
inline constexpr size_t kMaxTensorNameBytes = 1024;
inline constexpr int kMaxRank = 16;

enum class MessageType : uint16_t {
  kReply = 1,          // success: text and tensors as the request defines
  kError = 2,          // failure: error_code and text (the message)
  kGetStatus = 3,      // -> the task's cluster, devices and incarnation
  kRegisterGraph = 4,  // a partition graph (JSON) -> its handle
  kRunStep = 5,        // run registered graphs for one step, feeds in, fetches out
  kAbortStep = 6,      // fail a step's rendezvous on this task
  kCleanupStep = 7,    // forget a finished step's rendezvous
  kSendTensor = 8,     // a _Send's tensor for the _Recv's task; text = the key; no reply
  kDeregisterGraph = 9,
  kHeartbeat = 10,
  kLinkMessage = 11,   // collectives' point-to-point bytes: text = tag, tensors from, bytes
  kRendezvous = 12,    // elastic training's membership (JSON text): join a round, ask for a regroup
};
inline constexpr uint16_t kLastMessageType = 12;
std::string_view MessageTypeName(MessageType type);

struct WireTensor {
  std::string name;
  Tensor value;
};

struct Message {
  MessageType type = MessageType::kReply;
  uint64_t request_id = 0;
  int64_t deadline_ms = 0;             // milliseconds since the Unix epoch; 0 = none
  std::optional<Code> error_code;      // set exactly for kError
  std::string text;
  std::vector<WireTensor> tensors;

  // A kError reply to `request_id` carrying `error`.
  static Message ErrorReply(uint64_t request_id, const Error& error);
  // Throws the carried error when this is a kError message.
  void ThrowIfError() const;
};

// One outgoing frame: owned bytes, or (when `tensor` is valid) the tensor's
// own buffer, which the transport sends without copying.
struct OutFrame {
  std::string bytes;
  Tensor tensor;
};

std::vector<OutFrame> EncodeMessage(const Message& message);

// Makes the tensor of frame `index` (its size already checked against dtype
// and shape) without copying its bytes, or returns an invalid Tensor to have
// them copied into a fresh buffer.
using FrameAdopter = std::function<Tensor(size_t index, DType dtype, const Shape& shape)>;

// Throws kInvalidArgument naming the field that is wrong (frame count, magic,
// version, type, lengths, dtype, rank, dims, byte sizes, names).
Message DecodeMessage(std::span<const std::span<const std::byte>> frames,
                      const FrameAdopter& adopt = {});

// The request id of a header frame, when it has the right size and magic:
// so that even a bad message gets an error reply its sender can match.
std::optional<uint64_t> PeekRequestId(std::span<const std::byte> header);

// Milliseconds since the Unix epoch, `timeout_ms` from now (0 stays 0: none).
int64_t DeadlineIn(int64_t timeout_ms);
int64_t NowMs();

}  // namespace dflow::dist

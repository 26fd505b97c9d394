// The messages ZmqLink sends (internal to zmq_link*.cc): a LinkMessage is a
// kLinkMessage request whose text is the tag and whose tensors are the
// sender's rank ("from", int32 scalar) and the bytes ("bytes", uint8 vector).
// The hello of the start-up handshake is a LinkMessage under kHelloTag.
#pragma once

#include <optional>
#include <string>

#include "dist/collectives/point_to_point.h"
#include "dist/transport/wire.h"

namespace dflow::dist {

// No collective uses this tag: theirs start with "collective/".
inline constexpr const char* kHelloTag = "link/hello";
// What Shutdown sends every peer after its Flush.
inline constexpr const char* kGoodbyeTag = "link/goodbye";

struct LinkMessage {
  int from = -1;
  Bytes bytes;
};

Message EncodeLinkMessage(int from, const std::string& tag, const Bytes& bytes);
// nullopt when `request` is not a well-formed LinkMessage.
std::optional<LinkMessage> DecodeLinkMessage(const Message& request);

}  // namespace dflow::dist

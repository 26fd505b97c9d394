#include "dist/transport/wire.h"

#include <bit>
#include <chrono>
#include <cstring>

namespace dflow::dist {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the wire format is little-endian and written with memcpy");

// Header layout: offsets of each field in the 36-byte header frame.
constexpr size_t kMagicAt = 0, kVersionAt = 4, kTypeAt = 6, kRequestIdAt = 8, kDeadlineAt = 16,
                 kTextBytesAt = 24, kNumTensorsAt = 28, kErrorCodeAt = 32;

template <typename T>
void Put(std::string& out, size_t at, T value) {
  std::memcpy(out.data() + at, &value, sizeof(T));
}

template <typename T>
void Append(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

template <typename T>
T Get(std::span<const std::byte> in, size_t at) {
  T value;
  std::memcpy(&value, in.data() + at, sizeof(T));
  return value;
}

std::string EncodeHeader(const Message& m) {
  std::string header(kHeaderBytes, '\0');
  Put<uint32_t>(header, kMagicAt, kWireMagic);
  Put<uint16_t>(header, kVersionAt, kWireVersion);
  Put<uint16_t>(header, kTypeAt, static_cast<uint16_t>(m.type));
  Put<uint64_t>(header, kRequestIdAt, m.request_id);
  Put<int64_t>(header, kDeadlineAt, m.deadline_ms);
  Put<uint32_t>(header, kTextBytesAt, static_cast<uint32_t>(m.text.size()));
  Put<uint32_t>(header, kNumTensorsAt, static_cast<uint32_t>(m.tensors.size()));
  uint32_t code = m.error_code ? static_cast<uint32_t>(*m.error_code) + 1 : 0;
  Put<uint32_t>(header, kErrorCodeAt, code);
  return header;
}

// Per tensor: u16 name length, the name, u8 dtype, u8 rank, i64 dims[rank].
std::string EncodeTable(const std::vector<WireTensor>& tensors) {
  std::string table;
  for (const WireTensor& t : tensors) {
    Append<uint16_t>(table, static_cast<uint16_t>(t.name.size()));
    table += t.name;
    Append<uint8_t>(table, static_cast<uint8_t>(t.value.dtype()));
    Append<uint8_t>(table, static_cast<uint8_t>(t.value.rank()));
    for (int64_t dim : t.value.shape().dims()) Append<int64_t>(table, dim);
  }
  return table;
}

void CheckEncodable(const Message& m) {
  if (m.text.size() > kMaxTextBytes)
    Fail(Code::kInvalidArgument, "message text of ", m.text.size(), " bytes exceeds the limit of ",
         kMaxTextBytes);
  if (m.tensors.size() > kMaxTensors)
    Fail(Code::kInvalidArgument, "message has ", m.tensors.size(), " tensors, the limit is ",
         kMaxTensors);
  for (const WireTensor& t : m.tensors) {
    if (!t.value.valid()) Fail(Code::kInvalidArgument, "tensor '", t.name, "' is empty");
    if (t.name.size() > kMaxTensorNameBytes)
      Fail(Code::kInvalidArgument, "tensor name of ", t.name.size(), " bytes is too long");
    if (t.value.rank() > kMaxRank || static_cast<int64_t>(t.value.TotalBytes()) > kMaxFrameBytes)
      Fail(Code::kInvalidArgument, "tensor '", t.name, "' ", t.value.SummaryString(),
           " is too large to send");
  }
}

[[noreturn]] void Bad(const auto&... what) { Fail(Code::kInvalidArgument, "bad message: ", what...); }

struct TensorSpec {
  std::string name;
  DType dtype;
  std::vector<int64_t> dims;
  size_t bytes;
};

// Reads one tensor table entry at `at` and checks it against its data frame.
TensorSpec ReadSpec(std::span<const std::byte> table, size_t& at, size_t index,
                    size_t frame_bytes) {
  auto need = [&](size_t n, const char* field) {
    if (table.size() - at < n)
      Bad("tensor table entry ", index, " is cut short in field '", field, "'");
  };
  TensorSpec spec;
  need(2, "name_length");
  auto name_length = Get<uint16_t>(table, at);
  at += 2;
  if (name_length > kMaxTensorNameBytes)
    Bad("tensor ", index, " name_length ", name_length, " exceeds ", kMaxTensorNameBytes);
  need(name_length, "name");
  spec.name.assign(reinterpret_cast<const char*>(table.data() + at), name_length);
  at += name_length;
  need(2, "dtype");
  auto dtype = Get<uint8_t>(table, at);
  auto rank = Get<uint8_t>(table, at + 1);
  at += 2;
  if (dtype == 0 || dtype > static_cast<uint8_t>(DType::kBool))
    Bad("tensor ", index, " has unknown dtype ", int(dtype));
  spec.dtype = static_cast<DType>(dtype);
  if (rank > kMaxRank) Bad("tensor ", index, " rank ", int(rank), " exceeds ", kMaxRank);
  need(size_t{rank} * 8, "dims");
  // Overflow-safe: the running byte count never exceeds kMaxFrameBytes.
  int64_t bytes = static_cast<int64_t>(DTypeSize(spec.dtype));
  for (int d = 0; d < rank; ++d) {
    int64_t dim = Get<int64_t>(table, at);
    at += 8;
    if (dim < 0) Bad("tensor ", index, " dim ", d, " is negative (", dim, ")");
    if (dim != 0 && bytes > kMaxFrameBytes / dim)
      Bad("tensor ", index, " dims describe more than ", kMaxFrameBytes, " bytes");
    bytes *= dim;
    spec.dims.push_back(dim);
  }
  if (static_cast<size_t>(bytes) != frame_bytes)
    Bad("tensor ", index, " ('", spec.name, "') needs ", bytes, " bytes but its frame has ",
        frame_bytes);
  spec.bytes = static_cast<size_t>(bytes);
  return spec;
}

struct Header {
  MessageType type;
  uint64_t request_id;
  int64_t deadline_ms;
  uint32_t text_bytes, num_tensors, error_code;
};

Header ReadHeader(std::span<const std::byte> frame) {
  if (frame.size() != kHeaderBytes)
    Bad("header frame has ", frame.size(), " bytes, expected ", kHeaderBytes);
  if (uint32_t magic = Get<uint32_t>(frame, kMagicAt); magic != kWireMagic)
    Bad("header field 'magic' is ", magic, ", expected ", kWireMagic);
  if (uint16_t version = Get<uint16_t>(frame, kVersionAt); version != kWireVersion)
    Bad("header field 'version' is ", version, ", this build speaks ", kWireVersion);
  Header h;
  uint16_t type = Get<uint16_t>(frame, kTypeAt);
  if (type == 0 || type > kLastMessageType) Bad("header field 'type' is unknown (", type, ")");
  h.type = static_cast<MessageType>(type);
  h.request_id = Get<uint64_t>(frame, kRequestIdAt);
  h.deadline_ms = Get<int64_t>(frame, kDeadlineAt);
  if (h.deadline_ms < 0) Bad("header field 'deadline' is negative (", h.deadline_ms, ")");
  h.text_bytes = Get<uint32_t>(frame, kTextBytesAt);
  if (h.text_bytes > kMaxTextBytes) Bad("header field 'text_bytes' ", h.text_bytes, " exceeds ", kMaxTextBytes);
  h.num_tensors = Get<uint32_t>(frame, kNumTensorsAt);
  if (h.num_tensors > kMaxTensors) Bad("header field 'num_tensors' ", h.num_tensors, " exceeds ", kMaxTensors);
  h.error_code = Get<uint32_t>(frame, kErrorCodeAt);
  if (h.error_code > static_cast<uint32_t>(Code::kInternal) + 1)
    Bad("header field 'error_code' is unknown (", h.error_code, ")");
  if ((h.type == MessageType::kError) != (h.error_code != 0))
    Bad("header field 'error_code' is ", h.error_code, " for a ", MessageTypeName(h.type),
        " message (set exactly for errors)");
  return h;
}

}  // namespace

std::string_view MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kReply: return "Reply";
    case MessageType::kError: return "Error";
    case MessageType::kGetStatus: return "GetStatus";
    case MessageType::kRegisterGraph: return "RegisterGraph";
    case MessageType::kRunStep: return "RunStep";
    case MessageType::kAbortStep: return "AbortStep";
    case MessageType::kCleanupStep: return "CleanupStep";
    case MessageType::kSendTensor: return "SendTensor";
    case MessageType::kDeregisterGraph: return "DeregisterGraph";
    case MessageType::kHeartbeat: return "Heartbeat";
    case MessageType::kLinkMessage: return "LinkMessage";
    case MessageType::kRendezvous: return "Rendezvous";
  }
  return "unknown";
}

Message Message::ErrorReply(uint64_t request_id, const Error& error) {
  Message reply;
  reply.type = MessageType::kError;
  reply.request_id = request_id;
  reply.error_code = error.code();
  reply.text = error.message();
  return reply;
}

void Message::ThrowIfError() const {
  if (type == MessageType::kError) throw Error(error_code.value_or(Code::kInternal), text);
}

std::vector<OutFrame> EncodeMessage(const Message& message) {
  CheckEncodable(message);
  std::vector<OutFrame> frames;
  frames.reserve(3 + message.tensors.size());
  frames.push_back({EncodeHeader(message), {}});
  frames.push_back({message.text, {}});
  frames.push_back({EncodeTable(message.tensors), {}});
  for (const WireTensor& t : message.tensors) frames.push_back({{}, t.value});
  return frames;
}

Message DecodeMessage(std::span<const std::span<const std::byte>> frames, const FrameAdopter& adopt) {
  if (frames.empty()) Bad("no frames");
  Header h = ReadHeader(frames[0]);
  if (frames.size() != 3 + size_t{h.num_tensors})
    Bad("has ", frames.size(), " frames, the header's num_tensors ", h.num_tensors, " needs ",
        3 + size_t{h.num_tensors});
  if (frames[1].size() != h.text_bytes)
    Bad("text frame has ", frames[1].size(), " bytes, header field 'text_bytes' says ", h.text_bytes);
  // Every tensor spec is read and checked before any tensor is allocated.
  std::span<const std::byte> table = frames[2];
  std::vector<TensorSpec> specs;
  size_t at = 0;
  for (uint32_t i = 0; i < h.num_tensors; ++i) specs.push_back(ReadSpec(table, at, i, frames[3 + i].size()));
  if (at != table.size()) Bad("tensor table has ", table.size() - at, " trailing bytes");

  Message m;
  m.type = h.type;
  m.request_id = h.request_id;
  m.deadline_ms = h.deadline_ms;
  if (h.error_code) m.error_code = static_cast<Code>(h.error_code - 1);
  m.text.assign(reinterpret_cast<const char*>(frames[1].data()), frames[1].size());
  for (size_t i = 0; i < specs.size(); ++i) {
    Shape shape(specs[i].dims);
    Tensor value = adopt ? adopt(3 + i, specs[i].dtype, shape) : Tensor();
    if (!value.valid()) {
      value = Tensor(specs[i].dtype, std::move(shape));
      if (specs[i].bytes) std::memcpy(value.raw_data(), frames[3 + i].data(), specs[i].bytes);
    }
    m.tensors.push_back({std::move(specs[i].name), std::move(value)});
  }
  return m;
}

std::optional<uint64_t> PeekRequestId(std::span<const std::byte> header) {
  if (header.size() != kHeaderBytes || Get<uint32_t>(header, kMagicAt) != kWireMagic)
    return std::nullopt;
  return Get<uint64_t>(header, kRequestIdAt);
}

int64_t NowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

int64_t DeadlineIn(int64_t timeout_ms) { return timeout_ms > 0 ? NowMs() + timeout_ms : 0; }

}  // namespace dflow::dist

// libFuzzer target for the wire decoder (dist/transport/wire.cc). The input is cut into
// frames: a count byte, then per frame a 2-byte little-endian length and its
// bytes. Any input must either decode or throw kInvalidArgument; ASan and
// UBSan catch what a bad length or size calculation would do. With
// FUZZ_WIRE_SEED=FILE it writes one valid message in that layout and exits
// (corpus/wire/seed was written so).
// fuzz-sources: dist/transport/wire.cc graph/tensor.cc graph/shape.cc graph/dtype.cc graph/allocator.cc graph/status.cc
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dist/transport/wire.h"

using namespace dflow;
using namespace dflow::dist;

namespace {

void WriteSeed(const char* path) {
  Message m;
  m.type = MessageType::kRunStep;
  m.request_id = 7;
  m.text = R"({"step_id": 1})";
  m.tensors.push_back({"arg:0", Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2})});
  m.tensors.push_back({"arg:1", Tensor::Scalar<int32_t>(3)});
  std::string out(1, static_cast<char>(3 + m.tensors.size()));
  for (const OutFrame& f : EncodeMessage(m)) {
    std::string bytes = f.tensor.valid()
                            ? std::string(static_cast<const char*>(f.tensor.raw_data()), f.tensor.TotalBytes())
                            : f.bytes;
    uint16_t length = static_cast<uint16_t>(bytes.size());
    out.append(reinterpret_cast<const char*>(&length), 2);
    out += bytes;
  }
  FILE* file = std::fopen(path, "wb");
  std::fwrite(out.data(), 1, out.size(), file);
  std::fclose(file);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* seed = std::getenv("FUZZ_WIRE_SEED")) {
    WriteSeed(seed);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  size_t count = data[0] % 16, at = 1;
  std::vector<std::span<const std::byte>> frames;
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  for (size_t i = 0; i < count && at + 2 <= size; ++i) {
    uint16_t length;
    std::memcpy(&length, data + at, 2);
    at += 2;
    length = static_cast<uint16_t>(std::min<size_t>(length, size - at));
    frames.emplace_back(bytes + at, length);
    at += length;
  }
  try {
    DecodeMessage(frames);
  } catch (const Error& e) {
    if (e.code() != Code::kInvalidArgument) std::abort();  // only "bad message" is allowed
  }
  return 0;
}

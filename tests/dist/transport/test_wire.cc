// The wire format: messages survive an encode/decode round trip, and every
// malformed message (truncated, garbage, oversized, inconsistent) is refused
// with an error naming the field, before anything is allocated for it.
#include <catch2/catch.hpp>
#include <cstring>

#include "dist/transport/wire.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::dist;
using Catch::Matchers::Contains;

namespace {

// The frames of a message as plain byte strings (a tensor frame copied out).
std::vector<std::string> Frames(const Message& m) {
  std::vector<std::string> frames;
  for (const OutFrame& f : EncodeMessage(m)) {
    if (!f.tensor.valid()) {
      frames.push_back(f.bytes);
      continue;
    }
    frames.emplace_back(static_cast<const char*>(f.tensor.raw_data()), f.tensor.TotalBytes());
  }
  return frames;
}

Message Decode(const std::vector<std::string>& frames) {
  std::vector<std::span<const std::byte>> spans;
  for (const std::string& f : frames) spans.push_back(std::as_bytes(std::span(f)));
  return DecodeMessage(spans);
}

Message Sample() {
  Message m;
  m.type = MessageType::kRunStep;
  m.request_id = 42;
  m.deadline_ms = 1234567;
  m.text = R"({"step": 7})";
  m.tensors.push_back({"x", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3})});
  m.tensors.push_back({"n", Tensor::Scalar<int64_t>(-9)});
  m.tensors.push_back({"empty", Tensor::Zeros(DType::kInt32, Shape({0, 4}))});
  return m;
}

template <typename T>
void Poke(std::string& frame, size_t at, T value) {
  std::memcpy(frame.data() + at, &value, sizeof(T));
}

void ExpectRejected(const std::vector<std::string>& frames, const std::string& field) {
  CHECK_THROWS_WITH(Decode(frames), Contains(field));
}

}  // namespace

TEST_CASE("a message survives encoding and decoding", "[wire]") {
  Message m = Sample();
  Message back = Decode(Frames(m));
  CHECK(back.type == MessageType::kRunStep);
  CHECK(back.request_id == 42);
  CHECK(back.deadline_ms == 1234567);
  CHECK_FALSE(back.error_code);
  CHECK(back.text == m.text);
  REQUIRE(back.tensors.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(back.tensors[i].name == m.tensors[i].name);
    testing::ExpectEqual(back.tensors[i].value, m.tensors[i].value);
  }
}

TEST_CASE("an error reply carries its code and message", "[wire]") {
  Message reply = Message::ErrorReply(5, Error(Code::kUnavailable, "task 1 is gone"));
  Message back = Decode(Frames(reply));
  CHECK(back.type == MessageType::kError);
  CHECK(back.request_id == 5);
  REQUIRE(back.error_code == Code::kUnavailable);
  CHECK_THROWS_WITH(back.ThrowIfError(), Contains("task 1 is gone"));
  CHECK_NOTHROW(Sample().ThrowIfError());
}

TEST_CASE("tensor frames share the tensor's buffer instead of copying it", "[wire]") {
  Message m = Sample();
  std::vector<OutFrame> frames = EncodeMessage(m);
  REQUIRE(frames.size() == 6);
  CHECK(frames[3].tensor.SharesBufferWith(m.tensors[0].value));
}

TEST_CASE("a truncated or garbage header is refused naming the field", "[wire]") {
  std::vector<std::string> good = Frames(Sample());
  CHECK_THROWS_WITH(Decode({}), Contains("no frames"));
  auto frames = good;
  frames[0].resize(10);
  ExpectRejected(frames, "header frame has 10 bytes");
  frames = good;
  Poke<uint32_t>(frames[0], 0, 0xdeadbeef);
  ExpectRejected(frames, "'magic'");
  frames = good;
  Poke<uint16_t>(frames[0], 4, 99);
  ExpectRejected(frames, "'version'");
  frames = good;
  Poke<uint16_t>(frames[0], 6, 999);
  ExpectRejected(frames, "'type'");
  frames = good;
  Poke<int64_t>(frames[0], 16, -5);
  ExpectRejected(frames, "'deadline'");
  frames = good;
  Poke<uint32_t>(frames[0], 32, 3);  // an error code on a request
  ExpectRejected(frames, "'error_code'");
  frames = good;
  Poke<uint32_t>(frames[0], 32, 1000);
  ExpectRejected(frames, "'error_code'");
}

TEST_CASE("lengths and counts that disagree with the frames are refused", "[wire]") {
  std::vector<std::string> good = Frames(Sample());
  auto frames = good;
  frames.pop_back();
  ExpectRejected(frames, "num_tensors 3 needs 6");
  frames = good;
  Poke<uint32_t>(frames[0], 28, 0xffffffffu);  // oversized tensor count
  ExpectRejected(frames, "'num_tensors'");
  frames = good;
  Poke<uint32_t>(frames[0], 24, 0xffffffffu);  // oversized text
  ExpectRejected(frames, "'text_bytes'");
  frames = good;
  frames[1] += "x";
  ExpectRejected(frames, "text frame has");
  frames = good;
  frames[3].pop_back();
  ExpectRejected(frames, "needs 24 bytes but its frame has 23");
  frames = good;
  frames[2] += "zz";
  ExpectRejected(frames, "trailing bytes");
  frames = good;
  frames[2].resize(5);
  ExpectRejected(frames, "cut short");
}

TEST_CASE("bad dtypes, ranks, dims and name lengths are refused", "[wire]") {
  std::vector<std::string> good = Frames(Sample());
  // The first table entry: u16 name length (1), "x", u8 dtype, u8 rank, dims.
  auto frames = good;
  frames[2][3] = 0;
  ExpectRejected(frames, "unknown dtype 0");
  frames[2][3] = 77;
  ExpectRejected(frames, "unknown dtype 77");
  frames = good;
  frames[2][4] = 100;
  ExpectRejected(frames, "rank 100 exceeds");
  frames = good;
  Poke<int64_t>(frames[2], 5, -2);
  ExpectRejected(frames, "dim 0 is negative");
  frames = good;
  Poke<int64_t>(frames[2], 5, int64_t{1} << 62);
  Poke<int64_t>(frames[2], 13, int64_t{1} << 62);  // the product overflows int64
  ExpectRejected(frames, "dims describe more than");
  frames = good;
  Poke<uint16_t>(frames[2], 0, 60000);
  ExpectRejected(frames, "name_length 60000");
}

TEST_CASE("random garbage never crashes the decoder", "[wire]") {
  std::vector<std::string> good = Frames(Sample());
  uint32_t seed = 1;
  auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
  for (int trial = 0; trial < 2000; ++trial) {
    auto frames = good;
    std::string& frame = frames[next() % frames.size()];
    if (frame.empty()) continue;
    for (int flips = 1 + next() % 4; flips > 0; --flips) frame[next() % frame.size()] = char(next());
    try {
      Decode(frames);
    } catch (const Error& e) {
      CHECK(e.code() == Code::kInvalidArgument);
    }
  }
}

TEST_CASE("PeekRequestId reads the id only from a well-formed header", "[wire]") {
  std::vector<std::string> frames = Frames(Sample());
  CHECK(PeekRequestId(std::as_bytes(std::span(frames[0]))) == 42u);
  CHECK_FALSE(PeekRequestId(std::as_bytes(std::span(frames[1]))));
}

TEST_CASE("messages the encoder cannot express are refused on the sending side", "[wire]") {
  Message m;
  m.tensors.push_back({std::string(2000, 'n'), Tensor::Scalar<float>(1)});
  CHECK_THROWS_WITH(EncodeMessage(m), Contains("name"));
  m.tensors = {{"hole", Tensor()}};
  CHECK_THROWS_WITH(EncodeMessage(m), Contains("'hole' is empty"));
}

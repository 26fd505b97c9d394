// The safetensors format alone: CRC-32C known answers, the byte layout, a
// round trip of every dtype, files from other tools, and one clear error
// for each way a file can be damaged or malformed.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>

#include "models/crc32c.h"
#include "models/safetensors.h"
#include "tests/models/checkpoint_test_util.h"

namespace dflow {
namespace {

using testing::ExpectError;
using testing::ScratchDir;

TEST_CASE("crc32c matches the published check values", "[checkpoint]") {
  std::string digits = "123456789";
  CHECK(Crc32c(digits.data(), digits.size()) == 0xE3069283u);
  CHECK(Crc32cPortable(digits.data(), digits.size()) == 0xE3069283u);
  CHECK(Crc32c(nullptr, 0) == 0);
  // RFC 3720 (iSCSI), appendix B.4: 32 bytes of zeros, 32 bytes of 0xff.
  std::string zeros(32, '\0'), ones(32, '\xff');
  CHECK(Crc32c(zeros.data(), 32) == 0x8A9136AAu);
  CHECK(Crc32c(ones.data(), 32) == 0x62A8AB43u);
}

TEST_CASE("crc32c: hardware and table agree at every length and alignment", "[checkpoint]") {
  std::mt19937 rng(7);
  std::string bytes(300, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  for (size_t start = 0; start < 9; ++start)
    for (size_t n = 0; n + start <= bytes.size(); n += 13) {
      uint32_t expected = Crc32cPortable(bytes.data() + start, n);
      REQUIRE(Crc32c(bytes.data() + start, n) == expected);
      // Continuing from the CRC of a prefix gives the CRC of the whole.
      size_t half = n / 2;
      CHECK(Crc32c(bytes.data() + start + half, n - half, Crc32c(bytes.data() + start, half)) ==
            expected);
    }
}

std::vector<NamedTensor> EveryDType() {
  return {
      {"f32", Tensor::FromVector<float>({1.5f, -2, 3, 4, 5, 6}, {2, 3})},
      {"f64", Tensor::Scalar(3.25)},
      {"f16", Tensor::FromVector<Half>({Half(1.0f), Half(-0.5f)})},
      {"i8", Tensor::FromVector<int8_t>({-128, 0, 127})},
      {"u8", Tensor::FromVector<uint8_t>({0, 255})},
      {"i32", Tensor::FromVector<int32_t>({7, -7, 1 << 30, 0}, {2, 1, 2})},
      {"i64", Tensor::FromVector<int64_t>({int64_t{1} << 50})},
      {"bool", Tensor::FromVector<bool>({true, false, true})},
      {"empty", Tensor(DType::kFloat32, {0, 3})},
  };
}

TEST_CASE("safetensors: every dtype round-trips with its metadata", "[checkpoint]") {
  ScratchDir dir("safetensors_roundtrip");
  std::string path = dir / "all.safetensors";
  WriteSafetensors(path, EveryDType(), {{"note", "hello"}});
  SafetensorsReader reader(path);
  std::vector<NamedTensor> back = reader.ReadAll();
  std::vector<NamedTensor> expected = EveryDType();
  REQUIRE(back.size() == expected.size());
  for (size_t i = 0; i < back.size(); ++i) {
    INFO(expected[i].name);
    CHECK(back[i].name == expected[i].name);
    CHECK(back[i].tensor.Equals(expected[i].tensor));
  }
  CHECK(reader.metadata().at("note") == "hello");
  CHECK(reader.metadata().at(std::string(kSafetensorsFormatKey)) == kSafetensorsFormat);
  CHECK(reader.Find("f64")->crc32c.has_value());
}

TEST_CASE("safetensors: the byte layout other readers expect", "[checkpoint]") {
  ScratchDir dir("safetensors_layout");
  std::string path = dir / "two.safetensors";
  WriteSafetensors(path, {{"a", Tensor::FromVector<float>({1, 2})},
                          {"b", Tensor::FromVector<int64_t>({3}, {1, 1})}});
  std::string bytes = testing::ReadBytes(path);
  uint64_t n = testing::DataStart(path) - 8;
  CHECK((8 + n) % 8 == 0);  // padded: data starts aligned
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  CHECK(header["a"]["dtype"] == "F32");
  CHECK(header["a"]["shape"] == nlohmann::json::array({2}));
  CHECK(header["a"]["data_offsets"] == nlohmann::json::array({0, 8}));
  CHECK(header["b"]["dtype"] == "I64");
  CHECK(header["b"]["shape"] == nlohmann::json::array({1, 1}));
  CHECK(header["b"]["data_offsets"] == nlohmann::json::array({8, 16}));
  CHECK(header["__metadata__"]["crc32c:a"].get<std::string>().size() == 8);
  REQUIRE(bytes.size() == 8 + n + 16);
  float a1;
  std::memcpy(&a1, bytes.data() + 8 + n + 4, 4);
  CHECK(a1 == 2.0f);
  CHECK(bytes[8 + n + 8] == 3);  // little-endian int64
}

// A file as another tool writes it: no padding, no dflow metadata, no checksums.
std::string ForeignFile(const std::string& json, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  return out + json + data;
}

TEST_CASE("safetensors: reads files other tools wrote", "[checkpoint]") {
  ScratchDir dir("safetensors_foreign");
  std::string path = dir / "foreign.safetensors";
  std::string data("\x00\x00\x80\x3f\x00\x00\x00\x40\x02", 9);  // float32 1, 2; bool 2 (true)
  testing::WriteBytes(path, ForeignFile(R"({"m":{"dtype":"BOOL","shape":[1],"data_offsets":[8,9]},)"
                                        R"("x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                        data));
  SafetensorsReader reader(path);
  REQUIRE(reader.entries().size() == 2);
  CHECK(reader.entries()[0].name == "x");  // data order, not JSON order
  CHECK(reader.Read(*reader.Find("x")).ToVector<float>() == std::vector<float>{1, 2});
  CHECK(reader.Read(*reader.Find("m")).ToVector<bool>() == std::vector<bool>{true});
}

TEST_CASE("safetensors: truncated files are named as such", "[checkpoint]") {
  ScratchDir dir("safetensors_truncated");
  std::string path = dir / "t.safetensors";
  WriteSafetensors(path, EveryDType());
  std::string good = testing::ReadBytes(path);
  uint64_t data_start = testing::DataStart(path);
  auto expect_truncated = [&](size_t size, const std::string& what) {
    testing::WriteBytes(path, good.substr(0, size));
    ExpectError([&] { SafetensorsReader{path}; }, Code::kDataLoss, {path, what});
  };
  expect_truncated(0, "shorter than the 8-byte header length");
  expect_truncated(5, "shorter than the 8-byte header length");
  expect_truncated(data_start - 1, "is truncated: the header is");
  expect_truncated(good.size() - 1, "is truncated: the header describes");
  ExpectError([&] { SafetensorsReader{dir / "missing.safetensors"}; }, Code::kNotFound,
              {"missing.safetensors"});
}

TEST_CASE("safetensors: a flipped data byte is a checksum error naming the tensor",
          "[checkpoint]") {
  ScratchDir dir("safetensors_flip");
  std::string path = dir / "f.safetensors";
  WriteSafetensors(path, EveryDType());
  std::string bytes = testing::ReadBytes(path);
  SafetensorsReader clean(path);
  bytes[testing::DataStart(path) + clean.Find("i32")->begin + 5] ^= 0x10;
  testing::WriteBytes(path, bytes);
  SafetensorsReader reader(path);  // the header is intact
  CHECK(reader.Read(*reader.Find("f32")).valid());
  ExpectError([&] { reader.Read(*reader.Find("i32")); }, Code::kDataLoss,
              {path, "checksum mismatch in tensor 'i32'"});
}

// Each malformed header, with the words its error must contain.
struct BadHeader {
  std::string json;
  std::string data;
  std::string error;
  Code code = Code::kDataLoss;
};

TEST_CASE("safetensors: malformed headers are refused with a reason", "[checkpoint]") {
  const std::string f32x2 = R"("dtype":"F32","shape":[2],)";
  std::vector<BadHeader> cases = {
      {"[1, 2]", "", "does not start with '{'"},
      {R"({"a": {"dtype": )", "", "not valid JSON"},
      {R"({"a": 3})", "", "tensor 'a' is not an object"},
      {R"({"a":{"shape":[2],"data_offsets":[0,8]}})", std::string(8, 0),
       "tensor 'a' has no 'dtype'"},
      {R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", std::string(8, 0), "has no 'shape'"},
      {R"({"a":{"dtype":"F32","shape":[2]}})", std::string(8, 0), "has no 'data_offsets'"},
      {R"({"a":{"dtype":"F31","shape":[2],"data_offsets":[0,8]}})", std::string(8, 0),
       "unknown dtype 'F31'"},
      {R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})", std::string(4, 0),
       "dtype BF16, which dflow does not support", Code::kInvalidArgument},
      {R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", std::string(8, 0),
       "negative value -2 in 'shape'"},
      {R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", std::string(8, 0),
       "not an integer"},
      {R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})",
       std::string(8, 0), "has too many elements"},
      {"{\"a\":{" + f32x2 + R"("data_offsets":[8,0]}})", std::string(8, 0), "are out of order"},
      {"{\"a\":{" + f32x2 + R"("data_offsets":[0,12]}})", std::string(12, 0),
       "F32[2] needs 8 bytes but data_offsets [0, 12] span 12"},
      {"{\"a\":{" + f32x2 + R"("data_offsets":[0]}})", std::string(8, 0),
       "not a [begin, end] pair"},
      {"{\"a\":{" + f32x2 + R"("data_offsets":[0,8]},"b":{)" + f32x2 + R"("data_offsets":[4,12]}})",
       std::string(12, 0), "overlaps tensor 'a'"},
      {"{\"a\":{" + f32x2 + R"("data_offsets":[4,12]}})", std::string(12, 0), "a gap of 4 bytes"},
      {"{\"a\":{" + f32x2 + R"("data_offsets":[0,8]}})", std::string(10, 0),
       "2 unexpected bytes after the last tensor"},
      {R"({"__metadata__":{"k":3}})", "", "metadata 'k' is not a string"},
      {"{\"a\":{" + f32x2 + R"("data_offsets":[0,8]},"__metadata__":{"dflow.format":"1"}})",
       std::string(8, 0), "tensor 'a' has no checksum"},
      {R"({"__metadata__":{"crc32c:ghost":"00000000"}})", "",
       "names a tensor the file does not have"},
      {"{\"a\":{" + f32x2 + R"("data_offsets":[0,8]},"__metadata__":{"crc32c:a":"xyz"}})",
       std::string(8, 0), "not 8 hex digits"},
  };
  ScratchDir dir("safetensors_malformed");
  std::string path = dir / "bad.safetensors";
  for (const BadHeader& c : cases) {
    INFO(c.json);
    testing::WriteBytes(path, ForeignFile(c.json, c.data));
    ExpectError([&] { SafetensorsReader{path}; }, c.code, {path, c.error});
  }
}

TEST_CASE("safetensors: an absurd header length is refused before allocating", "[checkpoint]") {
  ScratchDir dir("safetensors_huge");
  std::string path = dir / "huge.safetensors";
  std::string bytes = ForeignFile("{}", "");
  bytes[6] = 0x10;  // 2^52 + 2 bytes of header announced
  testing::WriteBytes(path, bytes);
  ExpectError([&] { SafetensorsReader{path}; }, Code::kDataLoss, {path, "exceeds the limit"});
}

TEST_CASE("safetensors: the writer refuses what it cannot write", "[checkpoint]") {
  ScratchDir dir("safetensors_writer");
  std::string path = dir / "w.safetensors";
  Tensor t = Tensor::Scalar(1.0f);
  ExpectError(
      [&] {
        WriteSafetensors(path, {{"a", t}, {"a", t}});
      },
      Code::kInvalidArgument, {"'a' appears twice"});
  ExpectError(
      [&] {
        WriteSafetensors(path, {{"a", t}}, {{"crc32c:a", "0"}});
      },
      Code::kInvalidArgument, {"reserved"});
  ExpectError(
      [&] {
        WriteSafetensors(path, {{"", t}});
      },
      Code::kInvalidArgument, {"invalid tensor name"});
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("WriteFileDurable: replaces the file, leaves no temp, names a bad path", "[checkpoint]") {
  ScratchDir dir("durable");
  std::string path = dir / "f.bin";
  WriteFileDurable(path, {"old"});
  WriteFileDurable(path, {"ne", "", "w"});
  CHECK(testing::ReadBytes(path) == "new");
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()),
                      std::filesystem::directory_iterator()) == 1);
  ExpectError([&] { WriteFileDurable(dir / "no/such/dir/f.bin", {"x"}); }, Code::kUnavailable,
              {"no/such/dir/f.bin", "create temp file"});
}

}  // namespace
}  // namespace dflow

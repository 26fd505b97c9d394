// IDX files; see idx.h.
#include "models/data/idx.h"

#include <cstring>

#include "graph/file.h"
#include "graph/status.h"

namespace dflow::models {
namespace {

constexpr uint8_t kUnsignedByte = 0x08;
constexpr int kMaxDims = 8;

uint32_t BigEndian32(std::string_view bytes, size_t at) {
  auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + i])); };
  return byte(0) << 24 | byte(1) << 16 | byte(2) << 8 | byte(3);
}

}  // namespace

Tensor ParseIdx(std::string_view bytes, const std::string& source) {
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0)
    Fail(Code::kDataLoss, "'", source,
         "' is not an IDX file: it does not start with two zero bytes");
  const auto type = static_cast<uint8_t>(bytes[2]);
  const int rank = static_cast<uint8_t>(bytes[3]);
  if (type != kUnsignedByte)
    Fail(Code::kDataLoss, "IDX file '", source, "' holds values of type 0x", std::hex,
         static_cast<int>(type), std::dec, "; only unsigned bytes (0x08) are read");
  if (rank < 1 || rank > kMaxDims)
    Fail(Code::kDataLoss, "IDX file '", source, "' has ", rank, " dimensions, not 1..", kMaxDims);
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() < header)
    Fail(Code::kDataLoss, "IDX file '", source, "' is truncated: ", bytes.size(),
         " bytes, its header alone needs ", header);
  std::vector<int64_t> dims;
  uint64_t count = 1;
  for (int d = 0; d < rank; ++d) {
    dims.push_back(BigEndian32(bytes, 4 + 4 * static_cast<size_t>(d)));
    count *= static_cast<uint64_t>(dims.back());
    if (count > (uint64_t{1} << 40))
      Fail(Code::kDataLoss, "IDX file '", source, "' claims more than 2^40 values");
  }
  if (bytes.size() - header != count)
    Fail(Code::kDataLoss, "IDX file '", source, "' has ", bytes.size() - header,
         " bytes of values where its dimensions ", Shape(dims).ToString(), " need ", count,
         bytes.size() - header < count ? " (truncated)" : "");
  Tensor values(DType::kUInt8, Shape(dims));
  if (count > 0) std::memcpy(values.raw_data(), bytes.data() + header, count);
  return values;
}

Tensor ReadIdx(const std::string& path) { return ParseIdx(ReadFileToString(path), path); }

}  // namespace dflow::models

// CRC-32C: the remainder of the message (bit-reflected) divided by the
// Castagnoli polynomial 0x1EDC6F41 over GF(2), with the register starting at
// all ones and inverted at the end. Reflected, the polynomial reads
// 0x82F63B78, and one byte is folded in with a 256-entry table:
//   crc = table[(crc ^ byte) & 0xff] ^ (crc >> 8)
// SSE4.2's crc32 instruction does the same fold for 8 bytes at once.
#include "models/crc32c.h"

#include <array>
#include <cstring>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

namespace dflow {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78;  // 0x1EDC6F41 bit-reversed

// table[b] = the register after shifting byte b through 8 steps of the
// division: each step shifts right and subtracts (xors) the polynomial when
// the bit shifted out is 1.
constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? kPolynomial : 0);
    table[byte] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

// Folds bytes into the raw (not inverted) register.
uint32_t FoldBytes(uint32_t crc, const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

}  // namespace

uint32_t Crc32cPortable(const void* data, size_t n, uint32_t crc) {
  return ~FoldBytes(~crc, static_cast<const unsigned char*>(data), n);
}

uint32_t Crc32c(const void* data, size_t n, uint32_t crc) {
#if defined(__SSE4_2__)
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t reg = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);  // unaligned load; the instruction takes little-endian words
    reg = _mm_crc32_u64(reg, word);
  }
  return ~FoldBytes(static_cast<uint32_t>(reg), p, n);
#else
  return Crc32cPortable(data, n, crc);
#endif
}

}  // namespace dflow

// CRC-32C (Castagnoli), the checksum checkpoints store per tensor. It is the
// CRC iSCSI, ext4 and TensorFlow's record files use, and x86 computes it in
// hardware (SSE4.2's crc32 instruction).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dflow {

// The CRC-32C of `n` bytes, continuing from `crc` (the CRC of the bytes
// before them; 0 for none): Crc32c(ab) == Crc32c(b, Crc32c(a)).
// Uses the crc32 instruction when the compiler targets SSE4.2.
uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);
// The same value from the lookup table alone, whatever the target.
uint32_t Crc32cPortable(const void* data, size_t n, uint32_t crc = 0);

}  // namespace dflow

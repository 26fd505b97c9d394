// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11): a counter-based generator. Block i of a stream is a pure
// function of (key, counter = i), so any element can be drawn on any thread
// and the result does not depend on how work is split. Everything but
// BoxMuller is constexpr, so the CUDA kernels (ops/cuda/random.cu, built
// with --expt-relaxed-constexpr) draw the very same numbers.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace dflow {

class Philox {
 public:
  using Block = std::array<uint32_t, 4>;

  constexpr Philox(uint64_t key, uint64_t stream) : key_{static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)},
                                          stream_(stream) {}

  // Four independent 32-bit values for block `index` of the stream.
  constexpr Block operator()(uint64_t index) const {
    Block c = {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
               static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)};
    uint32_t k0 = key_[0], k1 = key_[1];
    for (int round = 0; round < 10; ++round) {
      uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
      uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
      c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1, static_cast<uint32_t>(p0)};
      k0 += kW0;
      k1 += kW1;
    }
    return c;
  }

 private:
  static constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;
  static constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
  std::array<uint32_t, 2> key_;
  uint64_t stream_;
};

// [0, 1) from the top 24 (float) or 53 (double) random bits.
constexpr float UniformFloat(uint32_t bits) { return static_cast<float>(bits >> 8) * 0x1.0p-24f; }
constexpr double UniformDouble(uint32_t hi, uint32_t lo) {
  uint64_t bits = (static_cast<uint64_t>(hi) << 32 | lo) >> 11;
  return static_cast<double>(bits) * 0x1.0p-53;
}

// A node's Philox key from its seed attrs: splitmix64's finaliser over both
// seeds, so nearby seeds give unrelated keys.
constexpr uint64_t MixSeeds(int64_t seed, int64_t seed2) {
  uint64_t z = static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(seed2);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// One N(0,1) value by Box-Muller from two uniforms: u1 in (0, 1], u2 in [0, 1).
inline double BoxMuller(double u1, double u2) {
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

}  // namespace dflow

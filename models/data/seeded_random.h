// Random numbers that are the same on every platform and standard library:
// the input pipeline's order of examples must be a pure function of its seed
// so that a restarted run sees the same batches. std::uniform_int_distribution
// and std::shuffle are implementation-defined, so they are not used here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace dflow::models {

// SplitMix64 (Steele, Lea & Flood 2014): a 64-bit counter pushed through a
// bijective mixer; every seed gives a full-period, well-mixed stream.
class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ull;
    return Mix(state_);
  }

  // Uniform in [0, n), n > 0. Draws below 2^64 mod n are rejected so that
  // every value is exactly equally likely.
  uint64_t Below(uint64_t n) {
    uint64_t threshold = (0 - n) % n;
    for (;;) {
      uint64_t x = Next();
      if (x >= threshold) return x % n;
    }
  }

  // Uniform in [lo, hi): the top 53 bits make a double in [0, 1) exactly.
  double Uniform(double lo, double hi) {
    return lo + (hi - lo) * (static_cast<double>(Next() >> 11) * 0x1.0p-53);
  }

  // True with probability p (p <= 0: never; p >= 1: always).
  bool Chance(double p) { return Uniform(0, 1) < p; }

  // SplitMix64's finaliser: a bijection on 64-bit words.
  static uint64_t Mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // One seed from several keys, e.g. (seed, epoch): each key is mixed in
  // turn, so (a, b) and (b, a) give unrelated seeds.
  static uint64_t Combine(std::initializer_list<uint64_t> keys) {
    uint64_t h = 0x6A09E667F3BCC909ull;
    for (uint64_t key : keys) h = Mix(h ^ Mix(key + 0x9E3779B97F4A7C15ull));
    return h;
  }

 private:
  uint64_t state_;
};

// Fisher-Yates: every permutation of `items` equally likely.
template <typename T>
void SeededShuffle(std::vector<T>& items, SeededRandom& random) {
  for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[random.Below(i)]);
}

}  // namespace dflow::models

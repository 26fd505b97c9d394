// What a fused convolution does to its output while it is still in cache:
// add a per-channel bias, then clamp (Relu, Relu6). The CPU conv paths
// (ops/cpu/conv2d.h) call Apply on each block of output pixels right after
// computing it, so the fused op makes one pass over memory, not three.
#pragma once

#include <cstdint>

#include "ops/conv.h"

namespace dflow::cpu {

template <typename T>
struct ConvEpilogue {
  const T* bias = nullptr;  // [O], added to every output pixel; null: no bias
  ConvActivation activation = ConvActivation::kNone;

  bool empty() const { return bias == nullptr && activation == ConvActivation::kNone; }

  // y[p, o] = activation(y[p, o] + bias[o]) for `pixels` rows of `channels`.
  void Apply(T* y, int64_t pixels, int64_t channels) const {
    switch (activation) {
      case ConvActivation::kNone: return Loop(y, pixels, channels, [](T v) { return v; });
      // Comparisons written so that NaN passes through, as in Relu / Relu6.
      case ConvActivation::kRelu:
        return Loop(y, pixels, channels, [](T v) { return v < T(0) ? T(0) : v; });
      case ConvActivation::kRelu6:
        return Loop(y, pixels, channels,
                    [](T v) { return v < T(0) ? T(0) : v > T(6) ? T(6) : v; });
    }
  }

 private:
  // One loop per activation, the switch outside, so each one vectorises.
  template <typename Clamp>
  void Loop(T* y, int64_t pixels, int64_t channels, Clamp clamp) const {
    for (int64_t p = 0; p < pixels; ++p) {
      T* row = y + p * channels;
      if (bias)
        for (int64_t o = 0; o < channels; ++o) row[o] = clamp(row[o] + bias[o]);
      else
        for (int64_t o = 0; o < channels; ++o) row[o] = clamp(row[o]);
    }
  }
};

}  // namespace dflow::cpu

// The int8 ops' arithmetic on one element, the same functions for every
// device: the CPU kernels (ops/cpu/quantize.cc, quantize_steps.h,
// quantized_add.cc) and the CUDA ones (ops/cuda/quant.cu) call them, so that
// both give the same codes. One freedom is left: a multiply followed by an
// add may be fused into one rounding by one compiler and not the other (nvcc
// fuses by default, GCC where the machine has FMA), so a value within an ulp
// of a rounding tie may take the neighbouring code. The formulas are in the
// ops' docs (ops/quant.cc, ops/quant_conv.cc).
#pragma once

#include <cstdint>

#include "ops/host_device.h"

namespace dflow::quant {

// Rounding for |v| < 2^23, by truncating to an integer and correcting, in
// arithmetic that vectorises (std::round and std::rint are calls).
DFLOW_HOST_DEVICE float RoundHalfAway(float v) {
  const float t = static_cast<float>(static_cast<int32_t>(v)), d = v - t;
  return t + (d >= 0.5f ? 1.0f : 0.0f) - (d <= -0.5f ? 1.0f : 0.0f);
}
DFLOW_HOST_DEVICE float RoundHalfEven(float v) {
  const auto i = static_cast<int32_t>(v);
  const float t = static_cast<float>(i), d = v - t;
  const bool odd = (i & 1) != 0;
  return t + (d > 0.5f || (d == 0.5f && odd) ? 1.0f : 0.0f) - (d < -0.5f || (d == -0.5f && odd) ? 1.0f : 0.0f);
}

// std::clamp as libstdc++ writes it, min(max(v, lo), hi) with std::min's
// and std::max's comparisons: NaN passes through, and the compiler
// vectorises it as one max and one min (a nested conditional became
// compares and blends, and the requantization 1.4x slower).
DFLOW_HOST_DEVICE float Clamp(float v, float lo, float hi) {
  const float above_lo = v < lo ? lo : v;
  return hi < above_lo ? hi : above_lo;
}

// QuantizeV2's codes of one slice: code = round(clamp(x, lo, hi) * factor)
// - offset, clamped to [lowest, highest] (ops/cpu/quantize_lines.h makes
// them). Six floats, so that a device kernel reads an array of them as floats.
struct CodeLine {
  float lo, hi, factor, offset, lowest, highest;
};
static_assert(sizeof(CodeLine) == 6 * sizeof(float));

// The code of x on `line`. The scaled value is first clamped to a code
// beyond either end, which changes no code and keeps it in RoundHalf*'s
// range; NaN becomes the lowest code.
template <typename T, bool kHalfToEven>
DFLOW_HOST_DEVICE T Code(const CodeLine& line, float x) {
  const float below = line.lowest + line.offset - 1, above = line.highest + line.offset + 1;
  float v = Clamp(x, line.lo, line.hi) * line.factor;
  v = v > below ? v : below;  // (NaN fails the comparison)
  v = v < above ? v : above;
  const float rounded = kHalfToEven ? RoundHalfEven(v) : RoundHalfAway(v);
  return static_cast<T>(static_cast<int32_t>(Clamp(rounded - line.offset, line.lowest, line.highest)));
}

// Dequantize: the value of a code, in double (step and origin of its slice).
DFLOW_HOST_DEVICE float Value(int32_t code, double step, double origin) {
  return static_cast<float>(code * step + origin);
}

// A value clamped to [0, 255] as its uint8 code: adding 0.5 and truncating
// rounds half away from zero for values >= 0.
DFLOW_HOST_DEVICE uint8_t RoundedCode(float clamped) {
  return static_cast<uint8_t>(static_cast<int32_t>(clamped + 0.5f));
}

// After an int8 product (the fused convolutions, the dense layer): output
// channel j's exact sum acc as the uint8 code of acc * scale[j] + offset[j]
// clamped to [lowest, 255] (ops/cpu/quantize_steps.h's Requantization makes
// the tables), or, dequantized, the float max(acc * scale[j] + bias[j], lowest).
DFLOW_HOST_DEVICE uint8_t RequantizedCode(int32_t acc, float scale, float offset, float lowest) {
  return RoundedCode(Clamp(static_cast<float>(acc) * scale + offset, lowest, 255.0f));
}
DFLOW_HOST_DEVICE float DequantizedValue(int32_t acc, float scale, float bias, float lowest) {
  const float v = static_cast<float>(acc) * scale + bias;
  return v < lowest ? lowest : v;
}

// The int8 residual addition: the code of clamp(x a + y b + c, lowest, 255).
DFLOW_HOST_DEVICE uint8_t AddedCode(uint8_t x, uint8_t y, float a, float b, float c, float lowest) {
  return RoundedCode(Clamp(static_cast<float>(x) * a + static_cast<float>(y) * b + c, lowest, 255.0f));
}

}  // namespace dflow::quant

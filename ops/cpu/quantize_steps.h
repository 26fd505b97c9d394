// What a code stands for, as Dequantize reads codes (ops/quant.cc has the
// formulas); shared by the kernels that take quantized inputs, so that every
// op reads a code the same way.
#pragma once

#include <algorithm>
#include <cmath>

namespace dflow::cpu {

// MIN_FIRST codes of [min, max] (min < max): value = (code - zero_point) * step,
// the zero point coding 0.0 exactly.
struct MinFirstCodes {
  double step, zero_point;
};

inline MinFirstCodes MinFirstCodesOf(float min, float max, int lowest_code) {
  const double step = (static_cast<double>(max) - min) / 255.0;
  return {step, lowest_code - std::round(min / step)};
}

// SCALED codes of [min, max] with codes in [lowest, highest]: value = code * step.
inline double ScaledStep(float min, float max, int lowest_code, int highest_code) {
  return lowest_code == 0 ? static_cast<double>(max) / highest_code
                          : std::max(static_cast<double>(min) / lowest_code, static_cast<double>(max) / highest_code);
}

}  // namespace dflow::cpu

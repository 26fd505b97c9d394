// What a code stands for, as Dequantize reads codes (ops/quant.cc has the
// formulas); shared by the kernels that take quantized inputs, so that every
// op reads a code the same way.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/quant_arithmetic.h"

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

// The requantization after an int8 product: output channel j's exact sum
// acc (of products of codes with steps in_step and channel_steps[j]) plus
// bias[j] to the MIN_FIRST uint8 code of `out`,
//   code = round(acc * scale[j] + offset[j]), clamped to [lowest, 255],
// scale[j] = in_step * channel_steps[j] / out.step, offset[j] = bias[j] /
// out.step + out.zero_point (rounding half away from zero; a ReLU raises
// lowest to the zero point's code; quant::RequantizedCode, which the GPU's
// kernels call too). Row's loop is plain arithmetic, so the compiler
// vectorises it.
struct Requantization {
  using Out = uint8_t;
  std::vector<float> scale, offset;
  float lowest = 0;

  Requantization(double in_step, const std::vector<double>& channel_steps, const float* bias,
                 const MinFirstCodes& out, bool relu)
      : lowest(relu ? static_cast<float>(std::clamp(out.zero_point, 0.0, 255.0)) : 0.0f) {
    for (size_t j = 0; j < channel_steps.size(); ++j) {
      scale.push_back(in_step * channel_steps[j] / out.step);
      offset.push_back(bias[j] / out.step + out.zero_point);
    }
  }

  // out[j] for the sums acc[j] of channels first .. first + width.
  void Row(const int32_t* acc, int64_t width, int64_t first, uint8_t* out) const {
    const float* s = scale.data() + first;
    const float* b = offset.data() + first;
    const float floor = lowest;  // by value: the byte stores may alias the members
    for (int64_t j = 0; j < width; ++j) out[j] = quant::RequantizedCode(acc[j], s[j], b[j], floor);
  }
};

// The float output of an int8 product (dynamic quantization): channel j's
// exact sum acc plus bias[j] as float32, y = acc * scale[j] + bias[j] with
// scale[j] = in_step * channel_steps[j], then max(y, 0) for a ReLU.
struct Dequantization {
  using Out = float;
  std::vector<float> scale;
  const float* bias;
  bool relu;

  Dequantization(double in_step, const std::vector<double>& channel_steps, const float* bias, bool relu)
      : bias(bias), relu(relu) {
    for (double step : channel_steps) scale.push_back(static_cast<float>(in_step * step));
  }

  void Row(const int32_t* acc, int64_t width, int64_t first, float* out) const {
    const float* s = scale.data() + first;
    const float* b = bias + first;
    const float lowest = relu ? 0.0f : -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < width; ++j) out[j] = quant::DequantizedValue(acc[j], s[j], b[j], lowest);
  }
};

}  // namespace dflow::cpu

// The range inputs of the fused int8 kernels (quantized_matmul.cc,
// quantized_conv.cc), read and checked the same way, errors naming the node.
#pragma once

#include <vector>

#include "graph/kernel.h"
#include "ops/cpu/quantize_steps.h"

namespace dflow::cpu {

// Input `input`, a float scalar, which must be finite.
float FiniteScalar(const OpKernelContext& ctx, int input);

// The MIN_FIRST uint8 codes of [min, max] (min < max), `what` naming the
// tensor in errors.
MinFirstCodes MinFirstInput(const OpKernelContext& ctx, float min, float max, const char* what);

// The SCALED int8 step of each of n channels from the range inputs
// `min_input` and `max_input` (one value each, or n), `what` naming them.
std::vector<double> ChannelSteps(const OpKernelContext& ctx, int min_input, int max_input, int64_t n,
                                 const char* what);

}  // namespace dflow::cpu

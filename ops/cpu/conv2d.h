// The CPU Conv2D forward pass, shared by the Conv2D and _FusedConv2D kernels
// (ops/cpu/conv2d.cc, ops/cpu/fused_conv2d.cc).
#pragma once

#include "graph/thread_pool.h"
#include "ops/conv.h"
#include "ops/cpu/conv_epilogue.h"

namespace dflow::cpu {

// y [N, OH, OW, O] = conv(x, w) (ops/conv.h), then epilogue applied to each
// block of output pixels as soon as that block is computed, inside the same
// parallel loop. Instantiated for float and double.
template <typename T>
void Conv2DForward(ThreadPool& pool, const ConvGeometry& g, const T* x, const T* w, T* y,
                   const ConvEpilogue<T>& epilogue = {});

}  // namespace dflow::cpu

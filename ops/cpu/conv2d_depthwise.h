// Direct CPU kernels for depthwise convolution (filter [KH, KW, 1, C*M],
// groups = C): no im2col, one pass over the output with the channel loop
// innermost. Used by the Conv2D, Conv2DBackpropInput and
// Conv2DBackpropFilter kernels when the geometry is depthwise.
#pragma once

#include "graph/thread_pool.h"
#include "ops/conv.h"
#include "ops/cpu/conv_epilogue.h"

namespace dflow::cpu {

// y[n, oh, ow, c*M + m] = sum_{kh, kw} x[n, ih, iw, c] * w[kh, kw, 0, c*M + m],
// ih = oh*sh - pad_top + kh*dh, iw = ow*sw - pad_left + kw*dw; the epilogue
// runs on each output row right after it is summed.
template <typename T>
void DepthwiseConv2D(ThreadPool& pool, const ConvGeometry& g, const T* x, const T* w, T* y,
                     const ConvEpilogue<T>& epilogue = {});
// dx[n, ih, iw, c] = sum_{kh, kw, m} dy[n, oh, ow, c*M + m] * w[kh, kw, 0, c*M + m] over
// the (oh, ow) whose window puts tap (kh, kw) on (ih, iw).
template <typename T>
void DepthwiseBackpropInput(ThreadPool& pool, const ConvGeometry& g, const T* w, const T* dy,
                            T* dx);
// dw[kh, kw, 0, c*M + m] = sum_{n, oh, ow} x[n, ih, iw, c] * dy[n, oh, ow, c*M + m].
template <typename T>
void DepthwiseBackpropFilter(ThreadPool& pool, const ConvGeometry& g, const T* x, const T* dy,
                             T* dw);

}  // namespace dflow::cpu

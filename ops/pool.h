// Pooling over NHWC images: MaxPool, AvgPool, their gradient ops and global
// average pooling, plus the window geometry (TensorFlow's SAME/VALID rule, or
// EXPLICIT pads) that the shape functions and the kernels (ops/cpu/pool*.cc,
// ops/cuda/pool.cc) share.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "graph/scope.h"

namespace dflow {

// One spatial dim of a window sliding with a stride, TensorFlow's rule:
//   VALID:    out = (in - size) / stride + 1 (needs in >= size), no padding;
//   SAME:     out = ceil(in / stride),
//             pad_total = max((out - 1) * stride + size - in, 0),
//             pad_before = pad_total / 2 (an odd extra row goes after);
//   EXPLICIT: given (before, after) pads, out = (in + before + after - size) / stride + 1,
//             pad_before = before.
// Output o reads inputs [o * stride - pad_before, ... + size), clipped to [0, in):
// the padding only decides where the windows sit, it is never read.
struct WindowDim {
  int64_t in = 0, out = 0, size = 1, stride = 1, pad_before = 0;
  int64_t begin(int64_t o) const { return std::max<int64_t>(o * stride - pad_before, 0); }
  int64_t end(int64_t o) const { return std::min(o * stride - pad_before + size, in); }
};
// `in` may be -1 (unknown): then out is -1 too. Throws kInvalidArgument
// when VALID and in < size.
WindowDim MakeWindowDim(int64_t in, int64_t size, int64_t stride, bool same);
// EXPLICIT padding along the dim named `dim_name` ("height" or "width").
// Every window must cover at least one element of the input (an average
// over none has no value), so this throws kInvalidArgument when a pad is
// >= size or the input is empty or shorter than the window even padded.
WindowDim MakeExplicitWindowDim(int64_t in, int64_t size, int64_t stride, int64_t before,
                                int64_t after, const char* dim_name);

struct PoolGeometry {
  int64_t batch = 0, channels = 0;
  WindowDim rows, cols;
  Shape output_shape() const { return Shape{batch, rows.out, cols.out, channels}; }
};
// Checks the attrs (ksize and strides: 4 ints >= 1, 1 on the batch and
// channel dims; padding "SAME", "VALID" or "EXPLICIT"; explicit_paddings as
// Conv2D's: 8 ints, (before, after) per NHWC dim, 0 on batch and channels,
// only with EXPLICIT) and that `input` is NHWC (rank 4; dims may be
// unknown). Throws kInvalidArgument saying what is wrong.
PoolGeometry MakePoolGeometry(const Shape& input, const std::vector<int64_t>& ksize,
                              const std::vector<int64_t>& strides, const std::string& padding,
                              const std::vector<int64_t>& explicit_paddings);

namespace ops {

// ksize and strides are [1, rows, cols, 1]; padding is "SAME", "VALID" or
// "EXPLICIT", which takes explicit_paddings: (before, after) per NHWC dim,
// as Conv2D's (e.g. {0, 0, top, bottom, left, right, 0, 0}).
struct PoolWindow {
  std::vector<int64_t> ksize;
  std::vector<int64_t> strides;
  std::string padding = "VALID";
  std::vector<int64_t> explicit_paddings = {};
};

// y[n, i, j, c] = max of x[n, window(i, j), c] (padding never wins).
Output MaxPool(const Scope& scope, const Input& input, const PoolWindow& window);
// y[n, i, j, c] = mean of x[n, window(i, j), c] over the window's elements
// inside the image (padding is not counted, as TensorFlow).
Output AvgPool(const Scope& scope, const Input& input, const PoolWindow& window);
// dx: each grad element added to the first maximum of its window (row-major).
Output MaxPoolGrad(const Scope& scope, const Input& orig_input, const Input& orig_output,
                   const Input& grad, const PoolWindow& window);
// The gradient of MaxPoolGrad with respect to `grad`: y[o] = g[argmax(o)],
// of orig_output's shape (a gather where MaxPoolGrad scatters).
Output MaxPoolGradGrad(const Scope& scope, const Input& orig_input, const Input& orig_output,
                       const Input& grad, const PoolWindow& window);
// dx: each grad element spread evenly over its window's valid elements.
// orig_input_shape is an int32 [4] vector.
Output AvgPoolGrad(const Scope& scope, const Input& orig_input_shape, const Input& grad,
                   const PoolWindow& window);

struct GlobalPoolAttrs {
  bool keep_dims = false;  // [N, 1, 1, C] instead of [N, C]
};
// Mean over the spatial dims {1, 2} of an NHWC tensor (no op of its own).
Output GlobalAvgPool(const Scope& scope, const Input& x, GlobalPoolAttrs attrs = {});

}  // namespace ops
}  // namespace dflow

// Shared pieces of the CPU pooling kernels (pool.cc, pool_grad.cc): the
// window geometry read from a node's attrs, and the per-channel argmax of
// one window. Images are NHWC, so a pixel is `channels` contiguous values
// and every inner loop runs over channels (vectorisable).
#pragma once

#include <string>
#include <vector>

#include "graph/kernel.h"
#include "ops/pool.h"

namespace dflow::pool {

// The node's ksize/strides/padding/explicit_paddings attrs, read once by the kernel.
class WindowAttrs {
 public:
  explicit WindowAttrs(const Node& node)
      : node_(node),
        ksize_(node.attr<std::vector<int64_t>>("ksize")),
        strides_(node.attr<std::vector<int64_t>>("strides")),
        padding_(node.attr<std::string>("padding")),
        explicit_paddings_(node.attr<std::vector<int64_t>>("explicit_paddings")) {}

  // The geometry for `input`; a bad shape or attr is an error naming the node.
  PoolGeometry Geometry(const Shape& input) const {
    try {
      return MakePoolGeometry(input, ksize_, strides_, padding_, explicit_paddings_);
    } catch (const Error& e) {
      Fail(e.code(), node_.Describe(), ": ", e.message());
    }
  }

 private:
  const Node& node_;
  std::vector<int64_t> ksize_, strides_;
  std::string padding_;
  std::vector<int64_t> explicit_paddings_;
};

// Element offsets of image n, of pixel (n, h, w) and of output pixel (n, i, j).
inline int64_t InputPixel(const PoolGeometry& g, int64_t n, int64_t h, int64_t w) {
  return ((n * g.rows.in + h) * g.cols.in + w) * g.channels;
}
inline int64_t OutputPixel(const PoolGeometry& g, int64_t n, int64_t i, int64_t j) {
  return ((n * g.rows.out + i) * g.cols.out + j) * g.channels;
}

// For output pixel (n, i, j): best[c] = the largest x in the window and
// where[c] = the element offset of its first occurrence (row-major), per
// channel. The window is never empty (see ops/pool.h): the first tap
// seeds both, later taps replace them only when strictly larger (selects,
// not branches, so the channel loop vectorises).
template <typename T>
void WindowArgmax(const T* x, const PoolGeometry& g, int64_t n, int64_t i, int64_t j, T* best,
                  int64_t* where) {
  const int64_t channels = g.channels;
  const int64_t h0 = g.rows.begin(i), w0 = g.cols.begin(j);
  const int64_t first = InputPixel(g, n, h0, w0);
  for (int64_t c = 0; c < channels; ++c) {
    best[c] = x[first + c];
    where[c] = first + c;
  }
  for (int64_t h = h0; h < g.rows.end(i); ++h)
    for (int64_t w = h == h0 ? w0 + 1 : w0; w < g.cols.end(j); ++w) {
      const int64_t at = InputPixel(g, n, h, w);
      const T* p = x + at;
      for (int64_t c = 0; c < channels; ++c) {
        const bool larger = p[c] > best[c];
        best[c] = larger ? p[c] : best[c];
        where[c] = larger ? at + c : where[c];
      }
    }
}

// Checks that a tensor has the shape a pooling kernel expects.
inline void RequireShape(const Node& node, const char* what, const Shape& actual,
                         const Shape& expected) {
  DFLOW_REQUIRE(actual == expected, node.Describe(), ": ", what, " has shape ",
                actual.ToString(), ", expected ", expected.ToString());
}

}  // namespace dflow::pool

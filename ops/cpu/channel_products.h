// Per-channel sums of products over NHWC pixels, the inner loop of the
// depthwise convolution forward pass and input gradient
// (ops/cpu/conv2d_depthwise.cc): vectorised over channels, with the sum kept
// in registers over the taps.
//
// Why register blocks of several vectors: each vector of channels is one
// chain of dependent multiply-adds; several independent chains side by side
// keep the FMA units busy, where one chain would wait on each add's latency.
// The sums over taps read one vector from each of KH*KW rows of the filter
// and of the input: with rows 4 KB apart (1024 float channels) those all map
// to one L1 set and evict each other, so the kernels use these loops only
// for narrower rows (kMaxTapRowBytes).
#pragma once

#include <cstdint>
#include <cstring>

namespace dflow::cpu {

// Channel rows at most this long go through SumOfProducts.
inline constexpr int64_t kMaxTapRowBytes = 2048;

namespace channel_products {

// One 64-byte vector of T (16 floats, 8 doubles).
template <typename T>
struct VecOf {
  typedef T type __attribute__((vector_size(64)));
};
template <typename T>
using Vec = typename VecOf<T>::type;
template <typename T>
inline constexpr int64_t kLanes = 64 / sizeof(T);

template <typename T>
Vec<T> Load(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename T>
void Store(T* p, const Vec<T>& v) {
  std::memcpy(p, &v, sizeof v);
}

// dst[c0 + c] = sum_t src[t][c0 + c] * w[t][c0 + c] for c < V vectors.
template <int V, typename T>
void SumBlock(const T* const* src, const T* const* w, int64_t taps, int64_t c0, T* dst) {
  constexpr int64_t lanes = kLanes<T>;
  Vec<T> acc[V] = {};
  for (int64_t t = 0; t < taps; ++t)
    for (int v = 0; v < V; ++v)
      acc[v] += Load(src[t] + c0 + v * lanes) * Load(w[t] + c0 + v * lanes);
  for (int v = 0; v < V; ++v) Store(dst + c0 + v * lanes, acc[v]);
}

}  // namespace channel_products

// dst[c] = sum_{t < taps} src[t][c] * w[t][c] for c < channels (zero when
// taps is 0): one output pixel of a depthwise convolution, or one input
// pixel of its input gradient.
template <typename T>
void SumOfProducts(const T* const* src, const T* const* w, int64_t taps, int64_t channels,
                   T* dst) {
  using namespace channel_products;
  constexpr int64_t lanes = kLanes<T>;
  int64_t c = 0;
  for (; c + 4 * lanes <= channels; c += 4 * lanes) SumBlock<4>(src, w, taps, c, dst);
  for (; c + lanes <= channels; c += lanes) SumBlock<1>(src, w, taps, c, dst);
  for (; c < channels; ++c) {
    T sum = 0;
    for (int64_t t = 0; t < taps; ++t) sum += src[t][c] * w[t][c];
    dst[c] = sum;
  }
}

}  // namespace dflow::cpu

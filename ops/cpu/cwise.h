// Shared machinery of the element-wise CPU kernels: numpy broadcasting of up
// to three inputs (output shape, collapsed dims, per-input strides), loops
// with contiguous and scalar fast paths, and kernel templates that apply a
// small functor struct (inline operator(), optional kCost) to every element.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "graph/kernel.h"

namespace dflow::cwise {

// ParallelFor's cost per element: 1 unless the functor says otherwise
// (transcendental functions declare ~10-40).
template <typename F>
constexpr int64_t CostOf() {
  if constexpr (requires { F::kCost; }) return F::kCost;
  else return 1;
}

// Builds a functor, handing it the node when it reads attrs (LeakyRelu's alpha).
template <typename F>
F MakeFunctor(const Node& node) {
  if constexpr (std::is_constructible_v<F, const Node&>) return F(node);
  else return F();
}

// How N inputs broadcast to the output, with dims collapsed: output dims of
// size 1 are dropped and neighbours merged when every input either spans
// both or broadcasts over both. [8,1,4,5] with [4,5] becomes dims [8,20],
// strides {20,1} and {0,1}; equal shapes become one dim with strides 1.
template <int N>
struct BroadcastLayout {
  Shape out_shape;
  std::vector<int64_t> dims;                    // collapsed, rank >= 1
  std::array<std::vector<int64_t>, N> strides;  // per input and dim; 0 = broadcast
  int64_t inner_stride(int i) const { return strides[i].back(); }
};

// Throws kInvalidArgument naming the shapes when they do not broadcast.
template <int N>
BroadcastLayout<N> MakeBroadcastLayout(const std::array<const Shape*, N>& shapes) {
  BroadcastLayout<N> layout;
  layout.out_shape = *shapes[0];
  for (int i = 1; i < N; ++i) layout.out_shape = BroadcastShapes(layout.out_shape, *shapes[i]);
  const Shape& out = layout.out_shape;
  const int rank = out.rank();
  std::vector<unsigned> masks;  // bit i: input i spans the dim (not broadcast)
  for (int d = 0; d < rank; ++d) {
    if (out.dim(d) == 1) continue;
    unsigned mask = 0;
    for (int i = 0; i < N; ++i) {
      int di = d - (rank - shapes[i]->rank());  // right-aligned
      if (di >= 0 && shapes[i]->dim(di) == out.dim(d)) mask |= 1u << i;
    }
    if (!masks.empty() && masks.back() == mask) {
      layout.dims.back() *= out.dim(d);
    } else {
      layout.dims.push_back(out.dim(d));
      masks.push_back(mask);
    }
  }
  if (layout.dims.empty()) {  // a single element
    layout.dims.push_back(1);
    masks.push_back(0);
  }
  for (int i = 0; i < N; ++i) {
    auto& strides = layout.strides[i];
    strides.assign(layout.dims.size(), 0);
    int64_t step = 1;
    for (int d = static_cast<int>(layout.dims.size()) - 1; d >= 0; --d) {
      if (!(masks[d] >> i & 1u)) continue;
      strides[d] = step;
      step *= layout.dims[d];
    }
  }
  return layout;
}

// Calls run(out_index, count, offsets) for the contiguous runs of output
// elements [begin, end) along the innermost collapsed dim; offsets[i] is
// input i's element offset at out_index (input i then advances by its inner
// stride, 0 or 1, per element).
template <int N, typename Run>
void ForEachRun(const BroadcastLayout<N>& layout, int64_t begin, int64_t end, Run&& run) {
  const auto& dims = layout.dims;
  const int last = static_cast<int>(dims.size()) - 1;
  std::vector<int64_t> index(dims.size());
  std::array<int64_t, N> offset{};
  int64_t rest = begin;
  for (int d = last; d >= 0; --d) {
    index[d] = rest % dims[d];
    rest /= dims[d];
    for (int i = 0; i < N; ++i) offset[i] += index[d] * layout.strides[i][d];
  }
  for (int64_t pos = begin; pos < end;) {
    int64_t count = std::min(dims[last] - index[last], end - pos);
    run(pos, count, offset);
    pos += count;
    index[last] += count;
    for (int i = 0; i < N; ++i) offset[i] += count * layout.strides[i][last];
    for (int d = last; d > 0 && index[d] == dims[d]; --d) {  // carry into outer dims
      index[d] = 0;
      ++index[d - 1];
      for (int i = 0; i < N; ++i)
        offset[i] += layout.strides[i][d - 1] - dims[d] * layout.strides[i][d];
    }
  }
}

// out[i] = f(in[i]) over n elements, split over the pool when large. `out`
// may be `in` (a forwarded buffer).
template <typename In, typename Out, typename F>
void MapUnary(ThreadPool& pool, int64_t n, const In* in, Out* out, const F& f) {
  pool.ParallelFor(n, CostOf<F>(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = f(in[i]);
  });
}

// out = f(a, b) with a and b broadcast by `layout`; the inner loops are
// specialised for contiguous/contiguous, contiguous/scalar and scalar/scalar.
template <typename A, typename B, typename Out, typename F>
void MapBinary(ThreadPool& pool, const BroadcastLayout<2>& layout, const A* a, const B* b,
               Out* out, const F& f) {
  const bool a_moves = layout.inner_stride(0) != 0, b_moves = layout.inner_stride(1) != 0;
  auto run = [&](int64_t o, int64_t count, const std::array<int64_t, 2>& offset) {
    const A* pa = a + offset[0];
    const B* pb = b + offset[1];
    Out* po = out + o;
    if (a_moves && b_moves) {
      for (int64_t j = 0; j < count; ++j) po[j] = f(pa[j], pb[j]);
    } else if (a_moves) {
      const B y = *pb;
      for (int64_t j = 0; j < count; ++j) po[j] = f(pa[j], y);
    } else if (b_moves) {
      const A x = *pa;
      for (int64_t j = 0; j < count; ++j) po[j] = f(x, pb[j]);
    } else {
      const Out z = f(*pa, *pb);
      for (int64_t j = 0; j < count; ++j) po[j] = z;
    }
  };
  pool.ParallelFor(layout.out_shape.NumElements(), CostOf<F>(),
                   [&](int64_t begin, int64_t end) { ForEachRun(layout, begin, end, run); });
}

// The output of a broadcasting op: input i's buffer when it has the output's
// shape and dtype and nobody else needs it, else a fresh tensor.
template <int N>
Tensor& AllocateBroadcastOutput(OpKernelContext& ctx, const BroadcastLayout<N>& layout) {
  for (int i = 0; i < N; ++i) {
    const Tensor& in = ctx.input(i);
    if (in.shape() == layout.out_shape && in.dtype() == ctx.node().output_dtype(0))
      return ctx.forward_input_or_allocate_output(i, 0, layout.out_shape);
  }
  return ctx.allocate_output(0, layout.out_shape);
}

// y = f(x) for an op with input and output of dtype T.
template <typename T, typename F>
class UnaryKernel : public OpKernel {
 public:
  explicit UnaryKernel(const Node& node) : OpKernel(node), fn_(MakeFunctor<F>(node)) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.forward_input_or_allocate_output(0, 0, x.shape());
    MapUnary(ctx.pool(), x.NumElements(), x.data<T>(), y.data<T>(), fn_);
  }

 private:
  F fn_;
};

// z = f(x, y) with broadcasting; inputs of dtype T, output of dtype Out. A
// functor may check its operands first with a static Check(x, y) (integer
// division rejects a zero divisor).
template <typename T, typename Out, typename F>
class BinaryKernel : public OpKernel {
 public:
  explicit BinaryKernel(const Node& node) : OpKernel(node), fn_(MakeFunctor<F>(node)) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    auto layout = MakeBroadcastLayout<2>({&x.shape(), &y.shape()});
    if (layout.out_shape.NumElements() == 0) {
      ctx.allocate_output(0, layout.out_shape);
      return;
    }
    if constexpr (requires { F::Check(x, y); }) F::Check(x, y);
    Tensor& z = AllocateBroadcastOutput(ctx, layout);
    MapBinary(ctx.pool(), layout, x.data<T>(), y.data<T>(), z.data<Out>(), fn_);
  }

 private:
  F fn_;
};

// Registration helpers: REGISTER_KERNEL_FOR_TYPES("Neg", "CPU", Unary<Neg>::Kernel, float, ...).
template <typename F>
struct Unary {
  template <typename T> using Kernel = UnaryKernel<T, F>;
};
template <typename F>
struct Binary {
  template <typename T> using Kernel = BinaryKernel<T, T, F>;
};
template <typename F>
struct Compare {
  template <typename T> using Kernel = BinaryKernel<T, bool, F>;
};

}  // namespace dflow::cwise

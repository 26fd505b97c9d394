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

#include "ops/cpu/eigen.h"

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

// Integer arithmetic that wraps around (two's complement) where plain signed
// arithmetic would overflow into undefined behaviour; floats pass through.
template <typename T>
T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename T>
T WrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}
template <typename T>
T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}
template <typename T>
T WrapNeg(T a) { return WrapSub(T(0), a); }

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

// The inner loop of a binary op over `count` outputs starting at out[o],
// specialised for contiguous/contiguous, contiguous/scalar and scalar/scalar.
template <typename A, typename B, typename Out, typename F>
struct BinaryRun {
  const A* a;
  const B* b;
  Out* out;
  bool a_moves, b_moves;  // inner stride 1 (else 0: one element repeated)
  const F& f;

  void operator()(int64_t o, int64_t count, const std::array<int64_t, 2>& offset) const {
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
  }
};

// out = f(a, b) where a and b are each either of the output's element count
// or a single element: no index arithmetic at all.
template <typename A, typename B, typename Out, typename F>
void MapBinaryFlat(ThreadPool& pool, int64_t n, const BinaryRun<A, B, Out, F>& run) {
  pool.ParallelFor(n, CostOf<F>(), [&](int64_t begin, int64_t end) {
    run(begin, end - begin, {run.a_moves ? begin : 0, run.b_moves ? begin : 0});
  });
}

// out = f(a, b) with a and b broadcast by `layout` (run's *_moves must be
// the layout's inner strides).
template <typename A, typename B, typename Out, typename F>
void MapBinary(ThreadPool& pool, const BroadcastLayout<2>& layout,
               const BinaryRun<A, B, Out, F>& run) {
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

// y = f(x) for an op with input and output of dtype T. A functor gives
// either a scalar operator()(T) or Vec(x), an Eigen array expression that
// Eigen evaluates with SIMD packets (exp, log, tanh...).
template <typename T, typename F>
class UnaryKernel : public OpKernel {
 public:
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;

  explicit UnaryKernel(const Node& node) : OpKernel(node), fn_(MakeFunctor<F>(node)) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.forward_input_or_allocate_output(0, 0, x.shape());
    const T* in = x.data<T>();
    T* out = y.data<T>();
    if constexpr (requires(Eigen::Map<const Array> m) { fn_.Vec(m); }) {
      // Element-wise, so reading and writing one forwarded buffer is safe.
      ctx.pool().ParallelFor(x.NumElements(), CostOf<F>(), [&](int64_t begin, int64_t end) {
        Eigen::Map<Array>(out + begin, end - begin) =
            fn_.Vec(Eigen::Map<const Array>(in + begin, end - begin));
      });
    } else {
      MapUnary(ctx.pool(), x.NumElements(), in, out, fn_);
    }
  }

 private:
  F fn_;
};

// z = f(x, y) with broadcasting; inputs of dtype T, output of dtype Out.
// Functors that divide declare kDivides: for integers a zero divisor is then
// an error (checked before any work) rather than a SIGFPE.
template <typename T, typename Out, typename F>
class BinaryKernel : public OpKernel {
 public:
  explicit BinaryKernel(const Node& node) : OpKernel(node), fn_(MakeFunctor<F>(node)) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    // Equal shapes, or one side a single element of no higher rank: the
    // output has the other side's shape and needs no index arithmetic.
    bool x_single = x.NumElements() == 1 && x.rank() <= y.rank();
    bool y_single = y.NumElements() == 1 && y.rank() <= x.rank();
    if (x.shape() == y.shape() || x_single || y_single) {
      const Shape& shape = y_single ? x.shape() : y.shape();
      if (shape.NumElements() > 0) CheckDivisor(y);
      Tensor& z = ForwardOrAllocate(ctx, x.shape() == shape ? 0 : 1, shape);
      MapBinaryFlat(ctx.pool(), shape.NumElements(), MakeRun(x, y, z, !x_single, !y_single));
      return;
    }
    auto layout = MakeBroadcastLayout<2>({&x.shape(), &y.shape()});
    if (layout.out_shape.NumElements() == 0) {
      ctx.allocate_output(0, layout.out_shape);
      return;
    }
    CheckDivisor(y);
    Tensor& z = AllocateBroadcastOutput(ctx, layout);
    MapBinary(ctx.pool(), layout,
              MakeRun(x, y, z, layout.inner_stride(0) != 0, layout.inner_stride(1) != 0));
  }

 private:
  BinaryRun<T, T, Out, F> MakeRun(const Tensor& x, const Tensor& y, Tensor& z, bool x_moves,
                                  bool y_moves) const {
    return {x.data<T>(), y.data<T>(), z.data<Out>(), x_moves, y_moves, fn_};
  }

  static Tensor& ForwardOrAllocate(OpKernelContext& ctx, int input, const Shape& shape) {
    if (ctx.input(input).shape() == shape && std::is_same_v<T, Out>)
      return ctx.forward_input_or_allocate_output(input, 0, shape);
    return ctx.allocate_output(0, shape);
  }

  // Every element of y is used when the output is not empty, so any zero
  // in y would be divided by.
  void CheckDivisor(const Tensor& y) const {
    if constexpr (std::is_integral_v<T> && requires { F::kDivides; }) {
      const T* d = y.data<T>();
      for (int64_t i = 0; i < y.NumElements(); ++i)
        if (d[i] == 0)
          Fail(Code::kInvalidArgument, node().op(), ": integer division by zero (element ", i,
               " of y, shape ", y.shape().ToString(), ", is 0)");
    }
  }

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

// CPU kernels for Sum, Prod, Mean, Max and Min over arbitrary axes.
//
// No transposes: the input is seen as a box of "collapsed" dims (size-1 dims
// dropped, neighbours that are both reduced or both kept merged), so common
// cases become [outer, reduce, inner] loops. The innermost dim is contiguous:
// either reduced (a vectorised fold of each row) or kept (out[j] op= x[j],
// also vectorised); Eigen supplies the float kernels, with NaN-propagating
// max/min. Big inputs split over the pool along a kept dim (disjoint
// outputs) or, when the output is small, along a reduced dim into per-chunk
// partial results combined at the end.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include <Eigen/Core>

#include "graph/kernel.h"
#include "ops/cpu/channel_products.h"
#include "ops/reduce.h"

namespace dflow {
namespace {

// Integers wrap on overflow like TensorFlow's; do the arithmetic unsigned so
// it is defined behaviour.
template <typename T>
using Arith = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>,
                                          std::type_identity<T>>::type;

// Each reducer has an identity, one step (Apply) and, for floating types,
// the Eigen functor that performs the same step on whole vector registers.
struct SumReducer {
  template <typename T> static T Identity() { return T(0); }
  template <typename T> static T Apply(T a, T b) { return T(Arith<T>(a) + Arith<T>(b)); }
  template <typename T> using EigenOp = Eigen::internal::scalar_sum_op<T, T>;
};
struct ProdReducer {
  template <typename T> static T Identity() { return T(1); }
  template <typename T> static T Apply(T a, T b) { return T(Arith<T>(a) * Arith<T>(b)); }
  template <typename T> using EigenOp = Eigen::internal::scalar_product_op<T, T>;
};
// Max/Min propagate NaN like numpy; their identity is TensorFlow's value for
// an empty reduction.
struct MaxReducer {
  template <typename T> static T Identity() {
    if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
  }
  template <typename T> static T Apply(T acc, T x) { return (x > acc || x != x) ? x : acc; }
  template <typename T> using EigenOp = Eigen::internal::scalar_max_op<T, T, Eigen::PropagateNaN>;
};
struct MinReducer {
  template <typename T> static T Identity() {
    if constexpr (std::numeric_limits<T>::has_infinity) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
  }
  template <typename T> static T Apply(T acc, T x) { return (x < acc || x != x) ? x : acc; }
  template <typename T> using EigenOp = Eigen::internal::scalar_min_op<T, T, Eigen::PropagateNaN>;
};

template <typename T> using ConstVec = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T> using Vec = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

// x[0, n) folded into one value (n > 0), for floats in an order fixed by the
// indices alone. (Eigen's redux starts its vector loop at the first 64-byte
// aligned element, so its sum depends on where x sits, and a tensor received
// over the network sits elsewhere than one from the allocator.) A sum runs
// four vectors of sums over blocks of four vectors, adds the leftover whole
// vectors into the first, folds the lanes pairwise and adds the tail; the
// other folds keep kLanes running values in a plain loop.
template <typename T, typename R>
T ReduceContiguous(const T* x, int64_t n) {
  if constexpr (std::is_floating_point_v<T> && std::is_same_v<R, SumReducer>) {
    using cpu::channel_products::Load;
    constexpr int64_t kVec = cpu::channel_products::kLanes<T>;
    cpu::channel_products::Vec<T> a0{}, a1{}, a2{}, a3{};
    int64_t i = 0;
    for (; i + 4 * kVec <= n; i += 4 * kVec) {
      a0 += Load(x + i), a1 += Load(x + i + kVec);
      a2 += Load(x + i + 2 * kVec), a3 += Load(x + i + 3 * kVec);
    }
    for (; i + kVec <= n; i += kVec) a0 += Load(x + i);
    T lanes[kVec];
    cpu::channel_products::Store(lanes, (a0 + a1) + (a2 + a3));
    for (int64_t w = kVec / 2; w >= 1; w /= 2)
      for (int64_t l = 0; l < w; ++l) lanes[l] += lanes[l + w];
    T sum = lanes[0];
    for (; i < n; ++i) sum += x[i];
    return sum;
  } else if constexpr (std::is_floating_point_v<T>) {
    constexpr int64_t kLanes = 128 / sizeof(T);
    T acc[kLanes];
    std::fill(acc, acc + kLanes, R::template Identity<T>());
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int64_t l = 0; l < kLanes; ++l) acc[l] = R::Apply(acc[l], x[i + l]);
    for (int64_t l = 0; i + l < n; ++l) acc[l] = R::Apply(acc[l], x[i + l]);
    T result = acc[0];
    for (int64_t l = 1; l < kLanes; ++l) result = R::Apply(result, acc[l]);
    return result;
  } else {
    T result = R::template Identity<T>();
    for (int64_t i = 0; i < n; ++i) result = R::Apply(result, x[i]);
    return result;
  }
}

// out[j] = Apply(out[j], x[j]) for j < n.
template <typename T, typename R>
void AccumulateRow(T* out, const T* x, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    Vec<T> acc(out, n);
    acc = acc.binaryExpr(ConstVec<T>(x, n), typename R::template EigenOp<T>());
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = R::Apply(out[j], x[j]);
  }
}

// AccumulateRow of four rows x, x + stride, ... at once: (x0 op x1) op
// (x2 op x3) is folded into out, which is then read and written once, not 4 times.
template <typename T, typename R>
void AccumulateFourRows(T* out, const T* x, int64_t stride, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    typename R::template EigenOp<T> op;
    ConstVec<T> x0(x, n), x1(x + stride, n), x2(x + 2 * stride, n), x3(x + 3 * stride, n);
    Vec<T> acc(out, n);
    acc = acc.binaryExpr(x0.binaryExpr(x1, op).binaryExpr(x2.binaryExpr(x3, op), op), op);
  } else {
    for (int r = 0; r < 4; ++r) AccumulateRow<T, R>(out, x + r * stride, n);
  }
}

// out[j] op= x[r * stride + j] for all rows r < rows, j < n. Short contiguous
// rows are folded as one long row into kLanes running values (lane l holds
// column l % n), so the loop runs over full vectors instead of n at a time.
template <typename T, typename R>
void FoldRows(T* out, const T* x, int64_t rows, int64_t stride, int64_t n) {
  constexpr int64_t kLanes = 64;
  if (stride != n || 2 * n > kLanes || rows * n < 4 * kLanes) {
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) AccumulateFourRows<T, R>(out, x + r * stride, stride, n);
    for (; r < rows; ++r) AccumulateRow<T, R>(out, x + r * stride, n);
    return;
  }
  int64_t lanes = kLanes / n * n, total = rows * n, i = 0;
  T acc[kLanes];
  std::fill(acc, acc + lanes, R::template Identity<T>());
  for (; i + lanes <= total; i += lanes) AccumulateRow<T, R>(acc, x + i, lanes);
  AccumulateRow<T, R>(acc, x + i, total - i);  // the tail starts at lane 0
  for (int64_t l = 0; l < lanes; ++l) out[l % n] = R::Apply(out[l % n], acc[l]);
}

// A strided view of the input: the last dim has input stride 1 and output
// stride 1 (kept) or 0 (reduced); out_strides are 0 on reduced dims.
struct Box {
  std::vector<int64_t> dims, in_strides, out_strides;
};

// Folds the box at `in` into `out` (which holds running values). The two
// innermost dims form a block done in one call: rows of a reduced last dim
// (one output each), or rows folded onto a kept last dim. An odometer walks
// the dims outside the block.
template <typename T, typename R>
void ReduceBox(const T* in, T* out, const Box& box) {
  int last = static_cast<int>(box.dims.size()) - 1;
  int64_t n = box.dims[last];
  bool inner_reduced = box.out_strides[last] == 0;
  int block = last >= 1 ? last - 1 : last;  // first dim of the block
  int64_t rows = last >= 1 ? box.dims[block] : 1;
  int64_t row_in = last >= 1 ? box.in_strides[block] : 0;
  int64_t row_out = last >= 1 ? box.out_strides[block] : 0;
  int64_t outer = 1;
  for (int i = 0; i < block; ++i) outer *= box.dims[i];
  std::vector<int64_t> pos(block, 0);  // odometer over dims [0, block)
  for (int64_t it = 0; it < outer; ++it) {
    if (inner_reduced) {
      for (int64_t r = 0; r < rows; ++r)
        out[r * row_out] = R::Apply(out[r * row_out], ReduceContiguous<T, R>(in + r * row_in, n));
    } else if (row_out == 0) {
      FoldRows<T, R>(out, in, rows, row_in, n);
    } else {
      for (int64_t r = 0; r < rows; ++r) AccumulateRow<T, R>(out + r * row_out, in + r * row_in, n);
    }
    for (int i = block - 1; i >= 0; --i) {
      in += box.in_strides[i];
      out += box.out_strides[i];
      if (++pos[i] < box.dims[i]) break;
      in -= box.in_strides[i] * box.dims[i];
      out -= box.out_strides[i] * box.dims[i];
      pos[i] = 0;
    }
  }
}

// The collapsed box of a non-empty input and the reduction mask; its dims
// are empty when nothing of size > 1 is reduced.
Box Collapse(const Shape& shape, const std::vector<bool>& mask) {
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape.dim(i) == 1) continue;
    if (!dims.empty() && reduced.back() == mask[i]) dims.back() *= shape.dim(i);
    else {
      dims.push_back(shape.dim(i));
      reduced.push_back(mask[i]);
    }
  }
  Box box;
  if (std::find(reduced.begin(), reduced.end(), true) == reduced.end()) return box;
  int rank = static_cast<int>(dims.size());
  box.dims = dims;
  box.in_strides.assign(rank, 0);
  box.out_strides.assign(rank, 0);
  int64_t in_stride = 1, out_stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    box.in_strides[i] = in_stride;
    in_stride *= dims[i];
    if (!reduced[i]) {
      box.out_strides[i] = out_stride;
      out_stride *= dims[i];
    }
  }
  return box;
}

// The outermost kept dim worth splitting across threads: two units or more
// per thread and, for the contiguous last dim, slices long enough to stay
// vectorised. -1 if none.
int SplittableKeptDim(const Box& box, int threads) {
  int last = static_cast<int>(box.dims.size()) - 1;
  for (int i = 0; i <= last; ++i)
    if (box.out_strides[i] != 0 && box.dims[i] >= threads * (i == last ? 64 : 2)) return i;
  return -1;
}

int LargestReducedDim(const Box& box) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(box.dims.size()); ++i)
    if (box.out_strides[i] == 0 && (best < 0 || box.dims[i] > box.dims[best])) best = i;
  return best;
}

template <typename T, typename R>
void ReduceParallel(ThreadPool& pool, const T* in, T* out, int64_t out_count, const Box& box) {
  int64_t total = 1;
  for (int64_t d : box.dims) total *= d;
  int threads = pool.num_threads();
  constexpr int64_t kMinParallelElements = int64_t{1} << 15;
  if (total < kMinParallelElements || threads <= 1) return ReduceBox<T, R>(in, out, box);
  // Splitting the contiguous last dim would make each thread read short
  // pieces of every row; when per-thread partial outputs are cheap, split a
  // reduced dim instead so each thread streams through whole rows.
  int kept = SplittableKeptDim(box, threads);
  bool partials_cheap = out_count * threads * 8 <= total;
  bool kept_is_last = kept == static_cast<int>(box.dims.size()) - 1;
  if (kept >= 0 && !(kept_is_last && partials_cheap)) {  // disjoint slices of the output
    pool.ParallelFor(box.dims[kept], total / box.dims[kept], [&](int64_t begin, int64_t end) {
      Box part = box;
      part.dims[kept] = end - begin;
      ReduceBox<T, R>(in + begin * box.in_strides[kept], out + begin * box.out_strides[kept], part);
    });
    return;
  }
  // Each chunk of the largest reduced dim folds into its own partial result
  // (chunk 0 straight into `out`), then the partials combine.
  int split = LargestReducedDim(box);
  int64_t extent = box.dims[split];
  int64_t chunks = std::min<int64_t>(threads, extent);
  std::vector<T> partials((chunks - 1) * out_count, R::template Identity<T>());
  pool.ParallelFor(chunks, total / chunks, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      int64_t begin = extent * c / chunks, end = extent * (c + 1) / chunks;
      Box part = box;
      part.dims[split] = end - begin;
      T* dst = c == 0 ? out : partials.data() + (c - 1) * out_count;
      ReduceBox<T, R>(in + begin * box.in_strides[split], dst, part);
    }
  });
  for (int64_t c = 1; c < chunks; ++c)
    for (int64_t i = 0; i < out_count; ++i)
      out[i] = R::Apply(out[i], partials[(c - 1) * out_count + i]);
}

template <typename T, typename R, bool kMean>
class ReduceKernel : public OpKernel {
 public:
  explicit ReduceKernel(const Node& node) : OpKernel(node), keep_dims_(node.attr<bool>("keep_dims")) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    std::vector<bool> mask = ReductionMask(ReadInt64s(ctx.input(1), "axis"), input.shape());
    std::vector<int64_t> out_dims;
    int64_t count = 1;  // elements folded into each output
    for (int i = 0; i < input.rank(); ++i) {
      if (mask[i]) count *= input.dim(i);
      if (!mask[i]) out_dims.push_back(input.dim(i));
      else if (keep_dims_) out_dims.push_back(1);
    }
    Shape out_shape(std::move(out_dims));
    Box box = input.NumElements() == 0 ? Box{} : Collapse(input.shape(), mask);
    if (input.NumElements() > 0 && box.dims.empty()) {  // only size-1 dims reduced: same values
      ctx.set_output(0, input.Reshaped(out_shape));
      return;
    }
    Tensor& output = ctx.allocate_output(0, out_shape);
    T* out = output.data<T>();
    int64_t out_count = output.NumElements();
    std::fill(out, out + out_count, R::template Identity<T>());
    if (input.NumElements() > 0)
      ReduceParallel<T, R>(ctx.pool(), input.data<T>(), out, out_count, box);
    if constexpr (kMean) Divide(out, out_count, count);
  }

 private:
  void Divide(T* out, int64_t out_count, int64_t count) const {
    if constexpr (std::is_integral_v<T>) {
      DFLOW_REQUIRE(count > 0 || out_count == 0, node().Describe(),
                    ": the mean of an empty set of integers is undefined");
      for (int64_t i = 0; i < out_count; ++i) out[i] /= static_cast<T>(count);
    } else {
      T denominator = static_cast<T>(count);  // 0 gives NaN, as numpy and TensorFlow
      for (int64_t i = 0; i < out_count; ++i) out[i] /= denominator;
    }
  }

  bool keep_dims_;
};

template <typename T> using SumKernel = ReduceKernel<T, SumReducer, false>;
template <typename T> using ProdKernel = ReduceKernel<T, ProdReducer, false>;
template <typename T> using MeanKernel = ReduceKernel<T, SumReducer, true>;
template <typename T> using MaxKernel = ReduceKernel<T, MaxReducer, false>;
template <typename T> using MinKernel = ReduceKernel<T, MinReducer, false>;

// Sums over the leading dims the target lacks and the dims where it is 1.
template <typename T>
class SumToShapeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    Shape target(ReadInt64s(ctx.input(1), "shape"));
    if (input.shape() == target) {
      ctx.set_output(0, input);
      return;
    }
    std::vector<bool> mask = BroadcastMask(input.shape(), target);
    Tensor& output = ctx.allocate_output(0, target);
    T* out = output.data<T>();
    std::fill(out, out + output.NumElements(), T(0));
    if (input.NumElements() == 0) return;
    Box box = Collapse(input.shape(), mask);
    if (box.dims.empty()) {  // only size-1 dims summed: the same values
      std::copy(input.data<T>(), input.data<T>() + input.NumElements(), out);
      return;
    }
    ReduceParallel<T, SumReducer>(ctx.pool(), input.data<T>(), out, output.NumElements(), box);
  }

 private:
  // Which dims of `in` are summed to reach `target` (right-aligned).
  std::vector<bool> BroadcastMask(const Shape& in, const Shape& target) const {
    int lead = in.rank() - target.rank();
    DFLOW_REQUIRE(lead >= 0, node().Describe(), ": cannot sum ", in.ToString(), " down to ",
                  target.ToString());
    std::vector<bool> mask(in.rank(), true);
    for (int i = 0; i < target.rank(); ++i) {
      int64_t t = target.dim(i), d = in.dim(lead + i);
      DFLOW_REQUIRE(t == d || t == 1, node().Describe(), ": cannot sum ", in.ToString(),
                    " down to ", target.ToString(), " (", in.ToString(),
                    " does not broadcast to it)");
      mask[lead + i] = t != d;
    }
    return mask;
  }
};

REGISTER_KERNEL_FOR_TYPES("SumToShape", "CPU", SumToShapeKernel, float, double, int32_t, int64_t);
REGISTER_KERNEL_FOR_TYPES("Sum", "CPU", SumKernel, float, double, int32_t, int64_t);
REGISTER_KERNEL_FOR_TYPES("Prod", "CPU", ProdKernel, float, double, int32_t, int64_t);
REGISTER_KERNEL_FOR_TYPES("Mean", "CPU", MeanKernel, float, double, int32_t, int64_t);
REGISTER_KERNEL_FOR_TYPES("Max", "CPU", MaxKernel, float, double, int32_t, int64_t);
REGISTER_KERNEL_FOR_TYPES("Min", "CPU", MinKernel, float, double, int32_t, int64_t);

}  // namespace
}  // namespace dflow

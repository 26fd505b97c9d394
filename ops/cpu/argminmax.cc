// CPU kernels for ArgMax and ArgMin: the input is seen as [outer, n, inner]
// around the reduced dimension. With inner == 1 each output is found in a
// contiguous row; otherwise a running best per column is updated one whole
// input row at a time, which reads memory in order.
#include <algorithm>
#include <limits>

#include <Eigen/Core>

#include "graph/kernel.h"
#include "ops/reduce.h"

namespace dflow {
namespace {

// Does x replace the current best? Strictly better, or a first NaN (numpy:
// NaN wins, and the first one stays).
template <typename T, bool kMax>
bool Better(T x, T best) {
  if (best != best) return false;
  if (x != x) return true;
  return kMax ? x > best : x < best;
}

template <typename T, bool kMax>
class ArgMinMaxKernel : public OpKernel {
 public:
  explicit ArgMinMaxKernel(const Node& node)
      : OpKernel(node), output_type_(node.attr<DType>("output_type")) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Tensor& dimension = ctx.input(1);
    DFLOW_REQUIRE(input.rank() >= 1, node().Describe(), ": input must have rank >= 1, got a scalar");
    DFLOW_REQUIRE(dimension.rank() == 0, node().Describe(), ": dimension must be a scalar, got shape ",
                  dimension.shape().ToString());
    std::vector<bool> mask = ReductionMask(ReadInt64s(dimension, "dimension"), input.shape());
    int axis = static_cast<int>(std::find(mask.begin(), mask.end(), true) - mask.begin());
    int64_t outer = 1, n = input.dim(axis), inner = 1;
    std::vector<int64_t> out_dims;
    for (int i = 0; i < input.rank(); ++i) {
      if (i < axis) outer *= input.dim(i);
      if (i > axis) inner *= input.dim(i);
      if (i != axis) out_dims.push_back(input.dim(i));
    }
    Tensor& output = ctx.allocate_output(0, Shape(std::move(out_dims)));
    if (output.NumElements() == 0) return;
    DFLOW_REQUIRE(n > 0, node().Describe(), ": dimension ", axis, " is empty in input shape ",
                  input.shape().ToString());
    if (output_type_ == DType::kInt32)
      DFLOW_REQUIRE(n <= std::numeric_limits<int32_t>::max(), node().Describe(), ": dimension of ",
                    n, " elements does not fit output_type int32");
    Dispatch<int32_t, int64_t>(output_type_, "ArgMax/ArgMin output_type", [&]<typename I>() {
      Run<I>(ctx.pool(), input.data<T>(), output.data<I>(), outer, n, inner);
    });
  }

 private:
  template <typename I>
  static void Run(ThreadPool& pool, const T* in, I* out, int64_t outer, int64_t n, int64_t inner) {
    if (inner == 1) {
      pool.ParallelFor(outer, n * 2, [&](int64_t first, int64_t last) {
        for (int64_t o = first; o < last; ++o) out[o] = static_cast<I>(ArgOfRow(in + o * n, n));
      });
      return;
    }
    // Several columns: whole rows are read in order, keeping a running best
    // per column. Split over outer indices when there are enough, else over
    // chunks of rows whose per-chunk bests are merged in order (a later chunk
    // wins only when strictly better, so the first index is kept).
    int threads = pool.num_threads();
    int64_t chunks = outer >= 2 * threads ? 1 : std::min<int64_t>(threads, n);
    if (chunks == 1) {
      pool.ParallelFor(outer, n * inner * 2, [&](int64_t first, int64_t last) {
        std::vector<T> row_best(inner);
        std::vector<int64_t> row_index(inner);
        for (int64_t o = first; o < last; ++o) {
          ArgOfColumns(in + o * n * inner, 0, n, inner, row_best.data(), row_index.data());
          std::copy(row_index.begin(), row_index.end(), out + o * inner);
        }
      });
      return;
    }
    std::vector<T> best(chunks * inner);
    std::vector<int64_t> index(chunks * inner);
    for (int64_t o = 0; o < outer; ++o) {
      const T* x = in + o * n * inner;
      pool.ParallelFor(chunks, n * inner * 2 / chunks, [&](int64_t first, int64_t last) {
        for (int64_t c = first; c < last; ++c)
          ArgOfColumns(x, n * c / chunks, n * (c + 1) / chunks, inner, best.data() + c * inner,
                       index.data() + c * inner);
      });
      for (int64_t j = 0; j < inner; ++j) {
        int64_t winner = 0;
        for (int64_t c = 1; c < chunks; ++c)
          if (Better<T, kMax>(best[c * inner + j], best[winner * inner + j])) winner = c;
        out[o * inner + j] = static_cast<I>(index[winner * inner + j]);
      }
    }
  }

  // For each column j < inner of rows [begin, end) (row i at x + i * inner):
  // the extreme value and the first row index holding it.
  static void ArgOfColumns(const T* x, int64_t begin, int64_t end, int64_t inner, T* best,
                           int64_t* index) {
    std::copy(x + begin * inner, x + (begin + 1) * inner, best);
    std::fill(index, index + inner, begin);
    for (int64_t i = begin + 1; i < end; ++i) {
      const T* row = x + i * inner;
      for (int64_t j = 0; j < inner; ++j)
        if (Better<T, kMax>(row[j], best[j])) {
          best[j] = row[j];
          index[j] = i;
        }
    }
  }

  // The first index of the extreme value (or of the first NaN) of x[0, n):
  // a vectorised max/min, then a scan for the first element equal to it.
  static int64_t ArgOfRow(const T* x, int64_t n) {
    Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> row(x, n);
    T target = kMax ? row.template maxCoeff<Eigen::PropagateNaN>()
                    : row.template minCoeff<Eigen::PropagateNaN>();
    int64_t arg = 0;
    if (target != target) {
      while (x[arg] == x[arg]) ++arg;
    } else {
      while (x[arg] != target) ++arg;
    }
    return arg;
  }

  DType output_type_;
};

template <typename T> using ArgMaxKernel = ArgMinMaxKernel<T, true>;
template <typename T> using ArgMinKernel = ArgMinMaxKernel<T, false>;

REGISTER_KERNEL_FOR_TYPES("ArgMax", "CPU", ArgMaxKernel, float, double, int32_t, int64_t);
REGISTER_KERNEL_FOR_TYPES("ArgMin", "CPU", ArgMinKernel, float, double, int32_t, int64_t);

}  // namespace
}  // namespace dflow

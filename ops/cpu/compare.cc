// CPU kernels of comparisons (bool output), logical ops and Select, all with
// numpy broadcasting.
#include "ops/cpu/cwise.h"

namespace dflow {
namespace {

using cwise::Compare;

struct Less {
  template <typename T> bool operator()(T x, T y) const { return x < y; }
};
struct LessEqual {
  template <typename T> bool operator()(T x, T y) const { return x <= y; }
};
struct Greater {
  template <typename T> bool operator()(T x, T y) const { return x > y; }
};
struct GreaterEqual {
  template <typename T> bool operator()(T x, T y) const { return x >= y; }
};
struct Equal {
  template <typename T> bool operator()(T x, T y) const { return x == y; }
};
struct NotEqual {
  template <typename T> bool operator()(T x, T y) const { return x != y; }
};

struct LogicalAnd {
  bool operator()(bool x, bool y) const { return x && y; }
};
struct LogicalOr {
  bool operator()(bool x, bool y) const { return x || y; }
};
struct LogicalNot {
  bool operator()(bool x) const { return !x; }
};

using LogicalAndKernel = cwise::BinaryKernel<bool, bool, LogicalAnd>;
using LogicalOrKernel = cwise::BinaryKernel<bool, bool, LogicalOr>;
using LogicalNotKernel = cwise::UnaryKernel<bool, LogicalNot>;

// output = condition ? t : e with all three broadcast together. Selecting
// only copies elements, so one loop per element size serves every dtype.
class SelectKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& c = ctx.input(0);
    const Tensor& t = ctx.input(1);
    const Tensor& e = ctx.input(2);
    auto layout = cwise::MakeBroadcastLayout<3>({&c.shape(), &t.shape(), &e.shape()});
    if (layout.out_shape.NumElements() == 0) {
      ctx.allocate_output(0, layout.out_shape);
      return;
    }
    Tensor& out = cwise::AllocateBroadcastOutput(ctx, layout);
    switch (DTypeSize(t.dtype())) {
      case 1: return Run<uint8_t>(ctx, layout, c, t, e, out);
      case 2: return Run<uint16_t>(ctx, layout, c, t, e, out);
      case 4: return Run<uint32_t>(ctx, layout, c, t, e, out);
      case 8: return Run<uint64_t>(ctx, layout, c, t, e, out);
      default: Fail(Code::kUnimplemented, "Select does not support dtype ", DTypeName(t.dtype()));
    }
  }

 private:
  template <typename U>
  static void Run(OpKernelContext& ctx, const cwise::BroadcastLayout<3>& layout, const Tensor& c,
                  const Tensor& t, const Tensor& e, Tensor& out) {
    const bool* cond = c.data<bool>();
    const U* then = static_cast<const U*>(t.raw_data());
    const U* other = static_cast<const U*>(e.raw_data());
    U* result = static_cast<U*>(out.raw_data());
    // Each input moves along the run (stride 1) or repeats one element (stride
    // 0); one specialised loop per combination lets gcc vectorise each.
    const int moves = (layout.inner_stride(0) ? 4 : 0) | (layout.inner_stride(1) ? 2 : 0) |
                      (layout.inner_stride(2) ? 1 : 0);
    auto loop = [&]<int kMoves>(int64_t o, int64_t count, const std::array<int64_t, 3>& offset) {
      const bool* pc = cond + offset[0];
      const U* pt = then + offset[1];
      const U* pe = other + offset[2];
      U* po = result + o;
      for (int64_t j = 0; j < count; ++j) {
        // Both loads unconditional, so that the choice becomes a vector blend.
        const U a = pt[kMoves & 2 ? j : 0], b = pe[kMoves & 1 ? j : 0];
        po[j] = pc[kMoves & 4 ? j : 0] ? a : b;
      }
    };
    auto run = [&](int64_t o, int64_t count, const std::array<int64_t, 3>& offset) {
      switch (moves) {
        case 0: return loop.template operator()<0>(o, count, offset);
        case 1: return loop.template operator()<1>(o, count, offset);
        case 2: return loop.template operator()<2>(o, count, offset);
        case 3: return loop.template operator()<3>(o, count, offset);
        case 4: return loop.template operator()<4>(o, count, offset);
        case 5: return loop.template operator()<5>(o, count, offset);
        case 6: return loop.template operator()<6>(o, count, offset);
        default: return loop.template operator()<7>(o, count, offset);
      }
    };
    ctx.pool().ParallelFor(layout.out_shape.NumElements(), 1, [&](int64_t begin, int64_t end) {
      cwise::ForEachRun(layout, begin, end, run);
    });
  }
};

#define DFLOW_NUMBER float, double, int32_t, int64_t

REGISTER_KERNEL_FOR_TYPES("Less", "CPU", Compare<Less>::Kernel, DFLOW_NUMBER);
REGISTER_KERNEL_FOR_TYPES("LessEqual", "CPU", Compare<LessEqual>::Kernel, DFLOW_NUMBER);
REGISTER_KERNEL_FOR_TYPES("Greater", "CPU", Compare<Greater>::Kernel, DFLOW_NUMBER);
REGISTER_KERNEL_FOR_TYPES("GreaterEqual", "CPU", Compare<GreaterEqual>::Kernel, DFLOW_NUMBER);
REGISTER_KERNEL_FOR_TYPES("Equal", "CPU", Compare<Equal>::Kernel, DFLOW_NUMBER, bool);
REGISTER_KERNEL_FOR_TYPES("NotEqual", "CPU", Compare<NotEqual>::Kernel, DFLOW_NUMBER, bool);
REGISTER_KERNEL("LogicalAnd", "CPU", LogicalAndKernel);
REGISTER_KERNEL("LogicalOr", "CPU", LogicalOrKernel);
REGISTER_KERNEL("LogicalNot", "CPU", LogicalNotKernel);
REGISTER_KERNEL("Select", "CPU", SelectKernel);

}  // namespace
}  // namespace dflow

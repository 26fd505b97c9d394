// CPU kernel of AddN: the element-wise sum of N same-shaped tensors.
#include "ops/cpu/cwise.h"

namespace dflow {
namespace {

template <typename T>
class AddNKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext& ctx) const override {
    const int n = ctx.num_inputs();
    const Tensor& first = ctx.input(0);
    for (int k = 1; k < n; ++k)
      DFLOW_REQUIRE(ctx.input(k).shape() == first.shape(), "AddN: inputs[", k, "] has shape ",
                    ctx.input(k).shape().ToString(), " but inputs[0] has shape ",
                    first.shape().ToString());
    if (n == 1) {
      ctx.set_output(0, first);
      return;
    }
    std::vector<const T*> in(n);
    for (int k = 0; k < n; ++k) in[k] = ctx.input(k).data<T>();
    Tensor& sum = ctx.forward_input_or_allocate_output(0, 0, first.shape());
    T* out = sum.data<T>();
    ctx.pool().ParallelFor(first.NumElements(), n, [&](int64_t begin, int64_t end) {
      // Blocks that stay in L1 while every input is added in, two at a time.
      constexpr int64_t kBlock = 2048;
      for (int64_t b = begin; b < end; b += kBlock) {
        const int64_t e = std::min(end, b + kBlock);
        for (int64_t i = b; i < e; ++i) out[i] = cwise::WrapAdd(in[0][i], in[1][i]);
        int k = 2;
        for (; k + 1 < n; k += 2) {
          const T* p = in[k];
          const T* q = in[k + 1];
          for (int64_t i = b; i < e; ++i)
            out[i] = cwise::WrapAdd(out[i], cwise::WrapAdd(p[i], q[i]));
        }
        if (k < n)
          for (int64_t i = b; i < e; ++i) out[i] = cwise::WrapAdd(out[i], in[k][i]);
      }
    });
  }
};

REGISTER_KERNEL_FOR_TYPES("AddN", "CPU", AddNKernel, float, double, int32_t, int64_t);

}  // namespace
}  // namespace dflow

// QuantizedMatMulWithBiasAndRequantize on the CPU: the exact integer product
// of cpu::Int8Rhs (ops/cpu/int8_gemm.h; b packed once and kept while it
// stays the same), then bias and requantization (the arithmetic is in the
// op's doc, ops/quant.cc).
#include <cmath>
#include <vector>

#include "graph/kernel.h"
#include "ops/cpu/int8_gemm.h"
#include "ops/cpu/quantized_inputs.h"

namespace dflow {
namespace {

class QuantizedMatMulKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const cpu::QuantizedMatMul mm = cpu::QuantizedMatMulOf(ctx);
    const cpu::ProductRanges& r = mm.ranges;
    const int64_t m = mm.m, k = mm.k, n = mm.n;
    const bool tb = mm.transpose_b;
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const float* bias = ctx.input(2).data<float>();

    auto packed = packed_.Get({k, n, tb}, b.data<int8_t>(), b.NumElements(), [&](const int8_t* bytes) {
      std::vector<int8_t> b_kn;
      if (tb) {  // [n, k] -> [k, n]
        b_kn.resize(k * n);
        for (int64_t j = 0; j < n; ++j)
          for (int64_t p = 0; p < k; ++p) b_kn[p * n + j] = bytes[j * k + p];
        bytes = b_kn.data();
      }
      return cpu::Int8RhsCache::Packed{cpu::Int8Rhs(bytes, k, n)};
    });
    std::vector<int32_t> acc(m * n);
    (*packed)[0].Multiply(ctx.device().compute_pool(), a.data<uint8_t>(), m, static_cast<int32_t>(r.in.zero_point),
                          acc.data());

    uint8_t* codes = ctx.allocate_output(0, Shape{m, n}).data<uint8_t>();
    const cpu::Requantization rq(r.in.step, r.weight_steps, bias, r.out, false);
    for (int64_t i = 0; i < m; ++i) rq.Row(acc.data() + i * n, n, 0, codes + i * n);
    cpu::WriteOutputRange(ctx, r.out_min, r.out_max);
  }

 private:
  mutable cpu::Int8RhsCache packed_;  // b, packed once for every run
};

REGISTER_KERNEL("QuantizedMatMulWithBiasAndRequantize", "CPU", QuantizedMatMulKernel);

}  // namespace
}  // namespace dflow

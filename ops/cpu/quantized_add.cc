// QuantizedAdd[AndRelu]AndRequantize and QuantizedRelu on the CPU: the
// residual addition and the ReLU of an int8 network (ops/quant.cc has the
// arithmetic in the ops' docs; ops/cpu/quantized_inputs.h reads the ranges).
#include <algorithm>

#include "graph/kernel.h"
#include "graph/thread_pool.h"
#include "ops/cpu/quantized_inputs.h"
#include "ops/quant_arithmetic.h"

namespace dflow {
namespace {

// z = clamp(x a + y b + c, lowest, 255) rounded (cpu::AddLine, quant::AddedCode).
class QuantizedAddKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const cpu::AddLine line = cpu::QuantizedAddLineOf(ctx);
    const Tensor& x = ctx.input(0);
    const uint8_t* px = x.data<uint8_t>();
    const uint8_t* py = ctx.input(1).data<uint8_t>();
    uint8_t* pz = ctx.allocate_output(0, x.shape()).data<uint8_t>();
    // Plain arithmetic the compiler vectorises; a pool task per 64 Ki elements.
    constexpr int64_t kBlock = 1 << 16;
    const int64_t n = x.NumElements();
    ctx.pool().ParallelFor((n + kBlock - 1) / kBlock, kBlock, [=](int64_t first, int64_t last) {
      // Everything in locals: a store through uint8_t* may alias anything,
      // the closure's members included, which would then be reloaded every
      // element and keep the loop from vectorising.
      const float a = line.a, b = line.b, c = line.c, floor = line.lowest;
      const uint8_t* x_codes = px;
      const uint8_t* y_codes = py;
      uint8_t* z_codes = pz;
      const int64_t end = std::min(n, last * kBlock);
      for (int64_t i = first * kBlock; i < end; ++i)
        z_codes[i] = quant::AddedCode(x_codes[i], y_codes[i], a, b, c, floor);
    });
    cpu::RepeatInputRange(ctx, 6);
  }
};

// y = max(x, the zero point's code), in x's range.
class QuantizedReluKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const uint8_t zero = cpu::QuantizedReluFloor(ctx);
    const uint8_t* px = x.data<uint8_t>();
    uint8_t* py = ctx.allocate_output(0, x.shape()).data<uint8_t>();
    for (int64_t i = 0; i < x.NumElements(); ++i) py[i] = std::max(px[i], zero);
    cpu::RepeatInputRange(ctx, 1);
  }
};

REGISTER_KERNEL("QuantizedRelu", "CPU", QuantizedReluKernel);
REGISTER_KERNEL("QuantizedAddAndRequantize", "CPU", QuantizedAddKernel);
REGISTER_KERNEL("QuantizedAddAndReluAndRequantize", "CPU", QuantizedAddKernel);

}  // namespace
}  // namespace dflow

// QuantizedAdd[AndRelu]AndRequantize and QuantizedRelu on the CPU: the
// residual addition and the ReLU of an int8 network (ops/quant.cc has the
// arithmetic in the ops' docs; ops/cpu/quantized_inputs.h reads the ranges).
#include <algorithm>

#include "graph/kernel.h"
#include "graph/thread_pool.h"
#include "ops/cpu/quantized_inputs.h"

namespace dflow {
namespace {

// z = clamp(x a + y b + c, lowest, 255) rounded (cpu::AddLine).
class QuantizedAddKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const cpu::AddLine line = cpu::QuantizedAddLineOf(ctx);
    const float a = line.a, b = line.b, c = line.c, lowest = line.lowest;
    const Tensor& x = ctx.input(0);
    const uint8_t* px = x.data<uint8_t>();
    const uint8_t* py = ctx.input(1).data<uint8_t>();
    uint8_t* pz = ctx.allocate_output(0, x.shape()).data<uint8_t>();
    // Plain arithmetic the compiler vectorises; a pool task per 64 Ki elements.
    constexpr int64_t kBlock = 1 << 16;
    const int64_t n = x.NumElements();
    // The constants by value: a store through uint8_t* may alias anything,
    // so values read through references would be reloaded every element.
    ctx.pool().ParallelFor((n + kBlock - 1) / kBlock, kBlock, [=](int64_t first, int64_t last) {
      const int64_t end = std::min(n, last * kBlock);
      for (int64_t i = first * kBlock; i < end; ++i) {
        float v = static_cast<float>(px[i]) * a + static_cast<float>(py[i]) * b + c;
        v = v < lowest ? lowest : v;
        v = v > 255.0f ? 255.0f : v;
        // Clamped, the value is >= 0, where adding 0.5 and truncating rounds half away from zero.
        pz[i] = static_cast<uint8_t>(static_cast<int32_t>(v + 0.5f));
      }
    });
    *ctx.allocate_output(1, Shape()).data<float>() = ctx.input(6).data<float>()[0];
    *ctx.allocate_output(2, Shape()).data<float>() = ctx.input(7).data<float>()[0];
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
    *ctx.allocate_output(1, Shape()).data<float>() = ctx.input(1).data<float>()[0];
    *ctx.allocate_output(2, Shape()).data<float>() = ctx.input(2).data<float>()[0];
  }
};

REGISTER_KERNEL("QuantizedRelu", "CPU", QuantizedReluKernel);
REGISTER_KERNEL("QuantizedAddAndRequantize", "CPU", QuantizedAddKernel);
REGISTER_KERNEL("QuantizedAddAndReluAndRequantize", "CPU", QuantizedAddKernel);

}  // namespace
}  // namespace dflow

// GPU OpKernels of the int8 ops: QuantizeV2, Dequantize, the fused int8
// convolutions (dense, grouped, depthwise; ...AndRequantize to uint8 codes
// or ...AndDequantize to float) and dense layer, QuantizedAdd[AndRelu]...
// and QuantizedRelu. The ranges are small host-memory inputs
// (host_memory.cc), read and checked by the CPU kernels' code
// (ops/cpu/quantize_lines.h, quantized_inputs.h); what they give per slice
// or per output channel is uploaded as a table, and the kernels in quant.cu
// apply it. The output ranges are made on the host, where the next int8
// op reads them.
#include <algorithm>
#include <limits>
#include <vector>

#include "ops/cpu/quantize_lines.h"
#include "ops/cpu/quantized_inputs.h"
#include "ops/cuda/kernel_util.h"
#include "ops/cuda/quant_launch.h"

namespace dflow {
namespace {

template <typename T>
Tensor Upload(const OpKernelContext& ctx, const std::vector<T>& values) {
  return cuda::Gpu(ctx).CopyToDevice(Tensor::FromVector(values), ctx.node().Describe());
}

cuda::SliceIndex SliceIndexOf(const Tensor& t, const cpu::Slices& s) {
  return {t.NumElements(), s.channels, s.inner};
}

class GpuQuantizeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const cpu::QuantizeLines lines = cpu::QuantizeLinesOf(ctx);
    std::vector<float> table;
    for (const quant::CodeLine& line : lines.lines)
      table.insert(table.end(), {line.lo, line.hi, line.factor, line.offset, line.lowest, line.highest});
    const Tensor on_device = Upload(ctx, table);
    Tensor& q = ctx.allocate_output(0, input.shape());
    cpu::WriteQuantizeRanges(ctx, lines);
    if (input.NumElements() == 0) return;
    cuda::LaunchQuantize(cuda::Stream(ctx), SliceIndexOf(input, lines.slices), input.data<float>(),
                         on_device.data<float>(), node().attr<std::string>("round_mode") == "HALF_TO_EVEN",
                         lines.codes == DType::kInt8,
                         q.raw_data());
    cuda::CheckLaunch(ctx, "QuantizeV2");
  }
};

class GpuDequantizeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const cpu::DequantizeLines lines = cpu::DequantizeLinesOf(ctx);
    std::vector<double> table;
    for (const cpu::ValueLine& line : lines.lines)
      table.insert(table.end(), {line.step, line.origin});
    const Tensor on_device = Upload(ctx, table);
    Tensor& x = ctx.allocate_output(0, input.shape());
    if (input.NumElements() == 0) return;
    cuda::LaunchDequantize(cuda::Stream(ctx), SliceIndexOf(input, lines.slices), input.raw_data(),
                           input.dtype() == DType::kInt8, on_device.data<double>(), x.data<float>());
    cuda::CheckLaunch(ctx, "Dequantize");
  }
};

// The stage after an int8 product, as the CPU's cpu::Requantization or
// cpu::Dequantization computes it, its tables uploaded (held here until
// the launch is queued; the caching allocator keeps them for the stream).
struct UploadedStage {
  Tensor scale, offset;
  cuda::ProductStage stage;
};

UploadedStage StageOf(const OpKernelContext& ctx, const cpu::ProductRanges& r) {
  const float* bias = ctx.input(2).data<float>();
  UploadedStage up;
  if (r.requantize) {
    const cpu::Requantization rq(r.in.step, r.weight_steps, bias, r.out, r.relu);
    up.scale = Upload(ctx, rq.scale), up.offset = Upload(ctx, rq.offset);
    up.stage = {up.scale.data<float>(), up.offset.data<float>(), rq.lowest, true};
  } else {
    const cpu::Dequantization dq(r.in.step, r.weight_steps, bias, r.relu);
    up.scale = Upload(ctx, dq.scale);
    up.offset = Upload(ctx, std::vector<float>(bias, bias + ctx.input(2).NumElements()));
    const float lowest = r.relu ? 0.0f : -std::numeric_limits<float>::infinity();
    up.stage = {up.scale.data<float>(), up.offset.data<float>(), lowest, false};
  }
  return up;
}

class GpuQuantizedConvKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const cpu::QuantizedConv conv = cpu::QuantizedConvOf(ctx);
    const UploadedStage up = StageOf(ctx, conv.ranges);
    Tensor& y = ctx.allocate_output(0, conv.geometry.output_shape());
    if (conv.ranges.requantize) cpu::WriteOutputRange(ctx, conv.ranges.out_min, conv.ranges.out_max);
    if (y.NumElements() == 0) return;
    cuda::LaunchQuantizedConv(cuda::Stream(ctx), cuda::ConvShapeOf(conv.geometry), ctx.input(0).data<uint8_t>(),
                              ctx.input(1).data<int8_t>(), static_cast<int32_t>(conv.ranges.in.zero_point), up.stage,
                              y.raw_data());
    cuda::CheckLaunch(ctx, "QuantizedConv");
  }
};

class GpuQuantizedMatMulKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const cpu::QuantizedMatMul mm = cpu::QuantizedMatMulOf(ctx);
    const UploadedStage up = StageOf(ctx, mm.ranges);
    Tensor& y = ctx.allocate_output(0, Shape{mm.m, mm.n});
    cpu::WriteOutputRange(ctx, mm.ranges.out_min, mm.ranges.out_max);
    if (y.NumElements() == 0) return;
    cuda::LaunchQuantizedMatMul(cuda::Stream(ctx), mm.m, mm.k, mm.n, mm.transpose_b, ctx.input(0).data<uint8_t>(),
                                ctx.input(1).data<int8_t>(), static_cast<int32_t>(mm.ranges.in.zero_point), up.stage,
                                y.data<uint8_t>());
    cuda::CheckLaunch(ctx, "QuantizedMatMul");
  }
};

class GpuQuantizedAddKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const cpu::AddLine line = cpu::QuantizedAddLineOf(ctx);
    const Tensor& x = ctx.input(0);
    Tensor& z = ctx.allocate_output(0, x.shape());
    cpu::RepeatInputRange(ctx, 6);
    if (x.NumElements() == 0) return;
    cuda::LaunchQuantizedAdd(cuda::Stream(ctx), x.NumElements(), x.data<uint8_t>(), ctx.input(1).data<uint8_t>(),
                             line.a, line.b, line.c, line.lowest, z.data<uint8_t>());
    cuda::CheckLaunch(ctx, "QuantizedAdd");
  }
};

class GpuQuantizedReluKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const uint8_t floor = cpu::QuantizedReluFloor(ctx);
    Tensor& y = ctx.allocate_output(0, x.shape());
    cpu::RepeatInputRange(ctx, 1);
    if (x.NumElements() == 0) return;
    cuda::LaunchQuantizedRelu(cuda::Stream(ctx), x.NumElements(), x.data<uint8_t>(), floor, y.data<uint8_t>());
    cuda::CheckLaunch(ctx, "QuantizedRelu");
  }
};

// The fused ops have fixed dtypes (no type attr): registered for any.
template <typename Kernel>
KernelRegistrar Fixed(const char* op) {
  return cuda::GpuKernel<Kernel>(op, DType::kInvalid);
}

[[maybe_unused]] const KernelRegistrar kQuantKernels[] = {
    cuda::GpuKernel<GpuQuantizeKernel>("QuantizeV2", DType::kUInt8),
    cuda::GpuKernel<GpuQuantizeKernel>("QuantizeV2", DType::kInt8),
    cuda::GpuKernel<GpuDequantizeKernel>("Dequantize", DType::kUInt8),
    cuda::GpuKernel<GpuDequantizeKernel>("Dequantize", DType::kInt8),
    Fixed<GpuQuantizedConvKernel>("QuantizedConv2DWithBiasAndRequantize"),
    Fixed<GpuQuantizedConvKernel>("QuantizedConv2DWithBiasAndReluAndRequantize"),
    Fixed<GpuQuantizedConvKernel>("QuantizedDepthwiseConv2DWithBiasAndRequantize"),
    Fixed<GpuQuantizedConvKernel>("QuantizedDepthwiseConv2DWithBiasAndReluAndRequantize"),
    Fixed<GpuQuantizedConvKernel>("QuantizedConv2DWithBiasAndDequantize"),
    Fixed<GpuQuantizedConvKernel>("QuantizedConv2DWithBiasAndReluAndDequantize"),
    Fixed<GpuQuantizedConvKernel>("QuantizedDepthwiseConv2DWithBiasAndDequantize"),
    Fixed<GpuQuantizedConvKernel>("QuantizedDepthwiseConv2DWithBiasAndReluAndDequantize"),
    Fixed<GpuQuantizedMatMulKernel>("QuantizedMatMulWithBiasAndRequantize"),
    Fixed<GpuQuantizedAddKernel>("QuantizedAddAndRequantize"),
    Fixed<GpuQuantizedAddKernel>("QuantizedAddAndReluAndRequantize"),
    Fixed<GpuQuantizedReluKernel>("QuantizedRelu"),
};

}  // namespace
}  // namespace dflow

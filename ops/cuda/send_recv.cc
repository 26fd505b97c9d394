// The GPU kernels of _Send and _Recv, for a graph cut between the host and
// a GPU, or between GPUs of different processes: what crosses the
// rendezvous is a host tensor (ops/send_recv.h). _Send copies its input to
// the host on the GPU's stream through the device's pinned staging buffer,
// waiting only for that copy (and so for the kernels queued before it,
// which produce the value); _Recv waits for the tensor without holding a
// thread, then enqueues its copy into the GPU's memory without waiting
// (graph/cuda/cuda_device.h), or keeps it in host memory when its
// consumers read it there (`host_memory`). Also the
// moves between the GPU's memory and the host's that partitioning adds
// (graph/memory_types.h).
#include "graph/memory_types.h"
#include "ops/cuda/kernel_util.h"
#include "ops/send_recv.h"

namespace dflow {
namespace {

class GpuSendKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    StepRendezvous(ctx).Send(SendRecvKey(node(), ctx.step().step_id), cuda::HostInput(ctx, 0));
  }
};

class GpuRecvKernel : public AsyncOpKernel {
 public:
  explicit GpuRecvKernel(const Node& node)
      : AsyncOpKernel(node),
        host_memory_(MemoryTypesOf(node, "GPU").outputs[0] == MemoryType::kHost) {}

  void ComputeAsync(OpKernelContext& ctx, Done done) const override {
    if (host_memory_) return ReceiveInto(ctx, node(), std::move(done), [](Tensor value) { return value; });
    ReceiveInto(
        ctx, node(), std::move(done),
        [this, &ctx](const Tensor& value) { return cuda::Gpu(ctx).CopyToDevice(value, node().Describe()); },
        /*place_on_device_threads=*/true);
  }

 private:
  bool host_memory_;
};

class GpuHostToDeviceKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    ctx.set_output(0, cuda::Gpu(ctx).CopyToDevice(ctx.input(0), node().Describe()));
  }
};

class GpuDeviceToHostKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override { ctx.set_output(0, cuda::HostInput(ctx, 0)); }
};

const KernelRegistrar kSendRecvKernels[] = {
    cuda::GpuKernel<GpuSendKernel>("_Send", DType::kInvalid),
    cuda::GpuKernel<GpuRecvKernel>("_Recv", DType::kInvalid),
    cuda::GpuKernel<GpuHostToDeviceKernel>("_HostToDevice", DType::kInvalid),
    cuda::GpuKernel<GpuDeviceToHostKernel>("_DeviceToHost", DType::kInvalid)};

}  // namespace
}  // namespace dflow

// The GPU kernels of _Send and _Recv, for a graph cut between the host and
// a GPU, or between GPUs of different processes: what crosses the
// rendezvous is a host tensor (ops/send_recv.h). _Send copies its input to
// the host on the GPU's stream through the device's pinned staging buffer,
// waiting only for that copy (and so for the kernels queued before it,
// which produce the value); _Recv waits for the tensor without holding a
// thread, then copies it into the GPU's memory the same way.
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
  using AsyncOpKernel::AsyncOpKernel;

  void ComputeAsync(OpKernelContext& ctx, Done done) const override {
    ReceiveInto(ctx, node(), std::move(done),
                [this, &ctx](const Tensor& value) { return cuda::Gpu(ctx).CopyToDevice(value, node().Describe()); });
  }
};

const KernelRegistrar kSendRecvKernels[] = {cuda::GpuKernel<GpuSendKernel>("_Send", DType::kInvalid),
                                            cuda::GpuKernel<GpuRecvKernel>("_Recv", DType::kInvalid)};

}  // namespace
}  // namespace dflow

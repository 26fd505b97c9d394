// The CPU kernels of _Send and _Recv: each end of a cut edge talks only to
// the step's rendezvous (StepContext::rendezvous), under the key its attrs
// name plus the step id (ops/send_recv.h). _Send hands its input over and
// returns; _Recv is asynchronous, so a partition waiting for a tensor holds
// no thread. Also the moves between a device's host and device memory
// (graph/memory_types.h), which on a device whose memory is the host's are
// plain copies.
#include "ops/handle_kernels.h"
#include "ops/send_recv.h"

namespace dflow {
namespace {

class SendKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    StepRendezvous(ctx).Send(SendRecvKey(node(), ctx.step().step_id), ctx.input(0));
  }
};

class RecvKernel : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;

  void ComputeAsync(OpKernelContext& ctx, Done done) const override {
    ReceiveInto(ctx, node(), std::move(done), [](Tensor value) { return value; });
  }
};

// The input cloned into the memory the context gives the output.
class CopyKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    ctx.set_output(0, ctx.input(0).Clone(ctx.output_allocator(0)));
  }
};

REGISTER_KERNEL("_Send", "CPU", SendKernel);
REGISTER_KERNEL("_Recv", "CPU", RecvKernel);
REGISTER_KERNEL("HostConst", "CPU", HostConstKernel);
REGISTER_KERNEL("_HostToDevice", "CPU", CopyKernel);
REGISTER_KERNEL("_DeviceToHost", "CPU", CopyKernel);

}  // namespace
}  // namespace dflow

// The CPU kernels of _Send and _Recv: each end of a cut edge talks only to
// the step's rendezvous (StepContext::rendezvous), under the key its attrs
// name plus the step id (ops/send_recv.h). _Send hands its input over and
// returns; _Recv is asynchronous, so a partition waiting for a tensor holds
// no thread.
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

REGISTER_KERNEL("_Send", "CPU", SendKernel);
REGISTER_KERNEL("_Recv", "CPU", RecvKernel);

}  // namespace
}  // namespace dflow

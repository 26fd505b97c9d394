// The CPU kernels of _Send and _Recv: each end of a cut edge talks only to
// the step's rendezvous (StepContext::rendezvous), under the key its attrs
// name plus the step id. _Send hands its input over and returns; _Recv is
// asynchronous, so a partition waiting for a tensor holds no thread.
#include "graph/kernel.h"

namespace dflow {
namespace {

RendezvousKey KeyOf(const Node& node, int64_t step_id) {
  return {node.attr<std::string>("send_device"), node.attr<int64_t>("send_device_incarnation"),
          node.attr<std::string>("recv_device"), node.attr<std::string>("tensor_name"), step_id};
}

Rendezvous& StepRendezvous(const OpKernelContext& ctx) {
  if (!ctx.step().rendezvous)
    Fail(Code::kFailedPrecondition, ctx.node().Describe(),
         " needs the step's rendezvous: run a partitioned graph through a Session with several "
         "devices");
  return *ctx.step().rendezvous;
}

class SendKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    StepRendezvous(ctx).Send(KeyOf(node(), ctx.step().step_id), ctx.input(0));
  }
};

class RecvKernel : public AsyncOpKernel {
 public:
  explicit RecvKernel(const Node& node)
      : AsyncOpKernel(node), dtype_(node.output_dtype(0)) {}

  void ComputeAsync(OpKernelContext& ctx, Done done) const override {
    RendezvousKey key = KeyOf(node(), ctx.step().step_id);
    StepRendezvous(ctx).RecvAsync(
        key, [this, &ctx, key, done = std::move(done)](std::optional<Error> error, Tensor value) {
          if (error) return done(std::move(error));
          if (!value.valid() || value.dtype() != dtype_)
            return done(Error(Code::kInternal,
                              StrCat("received ", value.valid() ? value.SummaryString() : "no tensor",
                                     " for ", key.ToString(), ", expected dtype ", DTypeName(dtype_))));
          ctx.set_output(0, std::move(value));
          done(std::nullopt);
        });
  }

 private:
  DType dtype_;
};

REGISTER_KERNEL("_Send", "CPU", SendKernel);
REGISTER_KERNEL("_Recv", "CPU", RecvKernel);

}  // namespace
}  // namespace dflow

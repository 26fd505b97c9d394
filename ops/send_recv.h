// What both ends of a cut edge share on every device: the rendezvous key a
// _Send or _Recv node's attrs name for a step, and the step's rendezvous.
// The CPU kernels (ops/cpu/send_recv.cc) hand host tensors over as they are;
// the GPU's (ops/cuda/send_recv.cc) copy them out of and into its memory,
// so what crosses a rendezvous is always in host memory.
#pragma once

#include <optional>

#include "graph/kernel.h"
#include "graph/rendezvous.h"

namespace dflow {

inline RendezvousKey SendRecvKey(const Node& node, int64_t step_id) {
  return {node.attr<std::string>("send_device"), node.attr<int64_t>("send_device_incarnation"),
          node.attr<std::string>("recv_device"), node.attr<std::string>("tensor_name"), step_id};
}

inline Rendezvous& StepRendezvous(const OpKernelContext& ctx) {
  if (!ctx.step().rendezvous)
    Fail(Code::kFailedPrecondition, ctx.node().Describe(),
         " needs the step's rendezvous: run a partitioned graph through a Session with several "
         "devices");
  return *ctx.step().rendezvous;
}

// Receives the step's tensor for `node` (a _Recv) without holding a thread,
// then sets output 0 to place(value): the value itself on the host, a copy
// of it on a GPU. `done` gets the first error: the rendezvous's, a value
// that is not the tensor `node` expects, or place's. A tensor that arrives
// later is handed over on the sender's thread (a CPU partition's executor
// thread, or a worker's message thread that serves every peer), so a place
// that may wait (a copy into a GPU's memory waits for its stream) asks for
// `place_on_device_threads`: it then runs on the receiving device's threads.
template <typename Place>
void ReceiveInto(OpKernelContext& ctx, const Node& node, AsyncOpKernel::Done done, Place place,
                 bool place_on_device_threads = false) {
  RendezvousKey key = SendRecvKey(node, ctx.step().step_id);
  StepRendezvous(ctx).RecvAsync(key, [&ctx, &node, key, done = std::move(done), place = std::move(place),
                                      place_on_device_threads](std::optional<Error> error, Tensor value) {
    const DType dtype = node.output_dtype(0);
    if (!error && (!value.valid() || value.dtype() != dtype))
      error = Error(Code::kInternal, StrCat("received ", value.valid() ? value.SummaryString() : "no tensor",
                                            " for ", key.ToString(), ", expected dtype ", DTypeName(dtype)));
    if (error) return done(std::move(error));
    auto finish = [&ctx, &node, done, place, value = std::move(value)]() mutable {
      try {
        ctx.set_output(0, place(std::move(value)));
      } catch (const Error& e) {
        return done(e);
      } catch (const std::exception& e) {  // not lost: done is this _Recv's only way to end
        return done(Error(Code::kInternal, StrCat(node.Describe(), ": ", e.what())));
      }
      done(std::nullopt);
    };
    if (place_on_device_threads) return ctx.device().compute_pool()->Schedule(std::move(finish));
    finish();
  });
}

}  // namespace dflow

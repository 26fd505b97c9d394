// Kernels of the parameter server's ops (ops/parameter_server.cc). The accumulator
// and the staleness log are dist/training/gradient_accumulator.h's classes, kept in
// the task's ResourceStore by name; the two ops that wait (TakeMean,
// WaitForStep) are asynchronous and wait on a thread of their own, so no
// executor thread is pinned while a worker is late.
#include <thread>

#include "dist/training/gradient_accumulator.h"
#include "graph/kernel.h"

namespace dflow::dist {
namespace {

struct AccumulatorResource : Resource {
  AccumulatorResource(GradientSpec spec, int num_required)
      : spec(spec), num_required(num_required), accumulator({spec}, num_required) {}
  GradientSpec spec;
  int num_required;
  SyncGradientAccumulator accumulator;
};

struct StalenessResource : Resource {
  StalenessLog log;
};

// The accumulator a node's attrs name, created by the first op that runs;
// an existing one must hold the same shape, dtype and number of workers.
std::shared_ptr<AccumulatorResource> Accumulator(const OpKernelContext& ctx) {
  const Node& node = ctx.node();
  auto name = node.attr<std::string>("shared_name");
  GradientSpec spec{name, node.attr<DType>("T"), node.attr<Shape>("shape")};
  auto num_required = node.attr<int64_t>("num_required");
  DFLOW_REQUIRE(num_required >= 1 && num_required <= 1 << 20, node.Describe(),
                ": num_required must be in 1..2^20, got ", num_required);
  auto resource = ctx.resources().LookupOrCreate<AccumulatorResource>(name, [&] {
    return std::make_shared<AccumulatorResource>(spec, static_cast<int>(num_required));
  });
  DFLOW_REQUIRE(resource->spec.dtype == spec.dtype && resource->spec.shape == spec.shape &&
                    resource->num_required == num_required,
                node.Describe(), ": accumulator '", name, "' holds ", DTypeName(resource->spec.dtype),
                resource->spec.shape.ToString(), " gradients of ", resource->num_required,
                " workers, not ", DTypeName(spec.dtype), spec.shape.ToString(), " of ", num_required);
  return resource;
}

std::shared_ptr<StalenessResource> Staleness(const OpKernelContext& ctx) {
  return ctx.resources().LookupOrCreate<StalenessResource>(
      ctx.node().attr<std::string>("shared_name"), [] { return std::make_shared<StalenessResource>(); });
}

int64_t ScalarInput(const OpKernelContext& ctx, int input) {
  const Tensor& t = ctx.input(input);
  DFLOW_REQUIRE(t.shape().rank() == 0, ctx.node().Describe(), ": input ", input,
                " must be a scalar, got ", t.SummaryString());
  return *t.data<int64_t>();
}

Deadline DeadlineAfter(const OpKernelContext& ctx, int input) {
  int64_t ms = ScalarInput(ctx, input);
  DFLOW_REQUIRE(ms >= 0, ctx.node().Describe(), ": timeout_ms must be >= 0, got ", ms);
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
}

void SetScalar(OpKernelContext& ctx, int output, int64_t value) {
  *ctx.allocate_output(output, Shape()).data<int64_t>() = value;
}

// Runs `wait` (which sets the outputs) on its own thread, then `done`.
void WaitOffThread(AsyncOpKernel::Done done, std::function<void()> wait) {
  std::thread([done = std::move(done), wait = std::move(wait)] {
    try {
      wait();
    } catch (const Error& e) {
      return done(e);
    } catch (const std::exception& e) {
      return done(Error(Code::kInternal, e.what()));
    }
    done(std::nullopt);
  }).detach();
}

class PushKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    auto worker = node().attr<int64_t>("worker");
    bool accepted = Accumulator(ctx)->accumulator.Push(static_cast<int>(worker), ScalarInput(ctx, 0),
                                                       {ctx.input(1)});
    *ctx.allocate_output(0, Shape()).data<bool>() = accepted;
  }
};

class TakeMeanKernel : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext& ctx, Done done) const override {
    auto resource = Accumulator(ctx);
    Deadline deadline = DeadlineAfter(ctx, 0);
    WaitOffThread(std::move(done), [&ctx, resource, deadline] {
      ctx.set_output(0, resource->accumulator.TakeMean(deadline)[0]);
    });
  }
};

class FinishStepKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    auto resource = Accumulator(ctx);
    resource->accumulator.FinishStep();
    SetScalar(ctx, 0, resource->accumulator.global_step());
  }
};

class WaitForStepKernel : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext& ctx, Done done) const override {
    auto resource = Accumulator(ctx);
    int64_t step = ScalarInput(ctx, 0);
    Deadline deadline = DeadlineAfter(ctx, 1);
    WaitOffThread(std::move(done), [&ctx, resource, step, deadline] {
      SetScalar(ctx, 0, resource->accumulator.WaitForStepAfter(step, deadline));
    });
  }
};

class StateKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    auto resource = Accumulator(ctx);
    SetScalar(ctx, 0, resource->accumulator.global_step());
    SetScalar(ctx, 1, resource->accumulator.stats().dropped_stale);
  }
};

class SetGlobalStepKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    Accumulator(ctx)->accumulator.SetGlobalStep(ScalarInput(ctx, 0));
  }
};

class AbortKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    Accumulator(ctx)->accumulator.Abort(node().attr<std::string>("reason"));
  }
};

class StalenessGlobalStepKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override { SetScalar(ctx, 0, Staleness(ctx)->log.global_step()); }
};

class StalenessRecordKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    auto resource = Staleness(ctx);
    auto worker = static_cast<int>(node().attr<int64_t>("worker"));
    int64_t local_step = ScalarInput(ctx, 0);
    int64_t staleness = resource->log.RecordUpdate(worker, local_step);
    SetScalar(ctx, 0, staleness);
    SetScalar(ctx, 1, local_step + staleness + 1);  // this update's own global step
  }
};

REGISTER_KERNEL("GradientAccumulatorPush", "CPU", PushKernel);
REGISTER_KERNEL("GradientAccumulatorTakeMean", "CPU", TakeMeanKernel);
REGISTER_KERNEL("GradientAccumulatorFinishStep", "CPU", FinishStepKernel);
REGISTER_KERNEL("GradientAccumulatorWaitForStep", "CPU", WaitForStepKernel);
REGISTER_KERNEL("GradientAccumulatorState", "CPU", StateKernel);
REGISTER_KERNEL("GradientAccumulatorAbort", "CPU", AbortKernel);
REGISTER_KERNEL("GradientAccumulatorSetGlobalStep", "CPU", SetGlobalStepKernel);
REGISTER_KERNEL("StalenessLogGlobalStep", "CPU", StalenessGlobalStepKernel);
REGISTER_KERNEL("StalenessLogRecord", "CPU", StalenessRecordKernel);

}  // namespace
}  // namespace dflow::dist

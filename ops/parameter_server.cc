// The parameter server's ops for between-graph training across processes.
// Synchronous mode (TensorFlow's SyncReplicasOptimizer): one gradient
// accumulator per variable, on the variable's ps task, named by
// `shared_name` and kept in the task's ResourceStore, so every worker's
// graph reaches the same one. Workers push; the chief takes the mean of
// `num_required` pushes, applies it and finishes the step; workers wait for
// the next global step. Asynchronous mode: a staleness log counts updates.
// Every accumulator op names the accumulator and says what it holds
// (num_required, shape, T), so whichever runs first on a task creates it.
// Kernels (with the parameter server, in dist/): dist/training/ps_kernels.cc,
// over dist/training/gradient_accumulator.h.
#include "graph/op_def.h"

namespace dflow {
namespace {

// An accumulator op's builder with the attrs they all carry. (The temporary
// lives until its registrar has read it: the end of the initialisation.)
OpDefBuilder& AccumulatorOp(OpDefBuilder&& op) {
  return op.attr<std::string>("shared_name")
      .attr<int64_t>("num_required")
      .attr<Shape>("shape")
      .type_attr("T", kFloatTypes);
}

void ScalarInt64(InferenceContext& ctx) { ctx.set_output(0, Shape()); }

}  // namespace

[[maybe_unused]] static OpRegistrar push_op = AccumulatorOp(OpDefBuilder("GradientAccumulatorPush"))
    .input("local_step", DType::kInt64)
    .input("gradient", "T")
    .output("accepted", DType::kBool)
    .attr<int64_t>("worker")
    .stateful()
    .shape_fn(ScalarInt64)
    .doc("Worker `worker`'s gradient, computed from the parameters of global step `local_step`. "
         "False when it is stale (an older step, or the chief already took this step's mean): "
         "it is dropped and counted. A step from the future, or a second push by one worker "
         "for one step, is an error.");

[[maybe_unused]] static OpRegistrar takemean_op = AccumulatorOp(OpDefBuilder("GradientAccumulatorTakeMean"))
    .input("timeout_ms", DType::kInt64)
    .output("mean", "T")
    .stateful()
    .shape_fn([](InferenceContext& ctx) { ctx.set_output(0, ctx.attr<Shape>("shape")); })
    .doc("Waits (without holding a thread) until `num_required` workers pushed for the current "
         "step and outputs their mean, summed in worker order. After `timeout_ms` it fails "
         "naming the workers heard from and those missing.");

[[maybe_unused]] static OpRegistrar finishstep_op = AccumulatorOp(OpDefBuilder("GradientAccumulatorFinishStep"))
    .output("global_step", DType::kInt64)
    .stateful()
    .shape_fn(ScalarInt64)
    .doc("After the chief applied the mean: advances the global step (output) and releases the "
         "workers waiting for it.");

[[maybe_unused]] static OpRegistrar waitforstep_op = AccumulatorOp(OpDefBuilder("GradientAccumulatorWaitForStep"))
    .input("step", DType::kInt64)
    .input("timeout_ms", DType::kInt64)
    .output("global_step", DType::kInt64)
    .stateful()
    .shape_fn(ScalarInt64)
    .doc("Waits (without holding a thread) until the global step exceeds `step` and outputs it; "
         "fails after `timeout_ms`.");

[[maybe_unused]] static OpRegistrar state_op = AccumulatorOp(OpDefBuilder("GradientAccumulatorState"))
    .output("global_step", DType::kInt64)
    .output("dropped_stale", DType::kInt64)
    .stateful()
    .shape_fn([](InferenceContext& ctx) {
      ctx.set_output(0, Shape());
      ctx.set_output(1, Shape());
    })
    .doc("The accumulator's global step and how many stale pushes it dropped so far.");

[[maybe_unused]] static OpRegistrar set_step_op = AccumulatorOp(OpDefBuilder("GradientAccumulatorSetGlobalStep"))
    .input("step", DType::kInt64)
    .stateful()
    .doc("A run restored from a checkpoint continues at global step `step` (between steps only).");

[[maybe_unused]] static OpRegistrar abort_op = AccumulatorOp(OpDefBuilder("GradientAccumulatorAbort"))
    .attr<std::string>("reason")
    .stateful()
    .doc("Training stopped: the accumulator's waiters, and every later call, fail with `reason` "
         "(the chief runs it after an error, so the workers waiting for the next step hear at once).");

REGISTER_OP("StalenessLogGlobalStep")
    .output("global_step", DType::kInt64)
    .attr<std::string>("shared_name")
    .stateful()
    .shape_fn(ScalarInt64)
    .doc("Asynchronous mode: the number of updates applied so far (read before computing "
         "gradients, it is the step the worker's parameters are from).");

REGISTER_OP("StalenessLogRecord")
    .input("local_step", DType::kInt64)
    .output("staleness", DType::kInt64)
    .output("global_step", DType::kInt64)
    .attr<std::string>("shared_name")
    .attr<int64_t>("worker")
    .stateful()
    .shape_fn([](InferenceContext& ctx) {
      ctx.set_output(0, Shape());
      ctx.set_output(1, Shape());
    })
    .doc("Asynchronous mode: records an update computed at `local_step`; outputs its staleness "
         "(updates applied since) and the global step after it.");

}  // namespace dflow

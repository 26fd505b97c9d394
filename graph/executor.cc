#include "graph/executor.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "graph/executor_item.h"

namespace dflow {

struct Executor::Step {
  std::vector<Tensor> values;
  // One allocation for both counters: [items] inputs pending per node,
  // then [slots] readers left per value.
  std::unique_ptr<std::atomic<int>[]> counters;
  std::atomic<int>* pending = nullptr;
  std::atomic<int>* readers_left = nullptr;
  std::atomic<int> outstanding{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::optional<Error> error;
  Done done;
  RunMetadata* metadata = nullptr;
  StepContext context;
  bool trace = false;
  std::function<void(size_t, const Tensor&)> on_fetch_ready;
  std::chrono::steady_clock::time_point start;
  std::vector<NodeExecStats> stats;
  std::vector<int> completion_order;
  std::mutex stats_mu;
};

namespace {

int64_t NanosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
      .count();
}

int SmallThreadId() {
  static std::atomic<int> next{0};
  thread_local int id = next++;
  return id;
}

std::atomic<int64_t> next_step_id{1};

// The edge a _Send or _Recv carries, as both ends name it; "" for other ops.
std::string TransferOf(const Node& node) {
  if (node.op() != "_Send" && node.op() != "_Recv") return {};
  return StrCat(node.attr<std::string>("send_device"), ";", node.attr<std::string>("recv_device"), ";",
                node.attr<std::string>("tensor_name"));
}

}  // namespace

int64_t SteadyClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

int64_t NewStepId() { return next_step_id++; }

void StartAndWait(const std::function<void(Executor::Done done)>& start) {
  struct Wait {
    std::mutex mu;
    std::condition_variable finished_cv;
    bool finished = false;
    std::optional<Error> error;
  } wait;
  // One pointer captured: the callback fits in std::function without a heap
  // allocation (this is on every step's path).
  start([w = &wait](std::optional<Error> result) {
    // Notify under the lock: StartAndWait returns, destroying `wait`, once it sees `finished`.
    std::lock_guard<std::mutex> lock(w->mu);
    w->error = std::move(result);
    w->finished = true;
    w->finished_cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(wait.mu);
    wait.finished_cv.wait(lock, [&] { return wait.finished; });
  }
  if (wait.error) throw *wait.error;
}

// An asynchronous kernel's context, kept alive until its done callback.
struct AsyncCall {
  std::vector<Tensor*> inputs;
  std::unique_ptr<bool[]> forwardable;
  std::optional<OpKernelContext> ctx;
  int64_t start_ns = 0;
};

Executor::~Executor() = default;

std::vector<Tensor> Executor::Run(const std::vector<Tensor>& args, const RunOptions& options,
                                  RunMetadata* metadata) const {
  if (static_cast<int>(args.size()) != num_args_)
    Fail(Code::kInvalidArgument, "executor expects ", num_args_, " fed values, got ", args.size());
  std::vector<Tensor> retvals(num_retvals_);
  // The calling thread runs the first root's chain itself (a small graph
  // then never touches the pool) and waits for the rest.
  StartAndWait([&](Done done) {
    RunAsync({NewStepId(), &args, &retvals, nullptr}, options, metadata, std::move(done),
             /*caller_runs_first_root=*/true);
  });
  for (int i = 0; i < num_retvals_; ++i)
    if (!retvals[i].valid()) Fail(Code::kInternal, "fetch ", i, " was not produced");
  return retvals;
}

void Executor::RunAsync(const ExecutorStep& request, const RunOptions& options,
                        RunMetadata* metadata, Done done, bool caller_runs_first_root) const {
  if (!request.args || static_cast<int64_t>(request.args->size()) < arg_bound_ || !request.retvals ||
      static_cast<int64_t>(request.retvals->size()) < retval_bound_)
    return done(Error(Code::kInvalidArgument,
                      StrCat("executor on ", device_->name(), " needs ", arg_bound_, " fed values and room for ",
                             retval_bound_, " fetches, got ", request.args ? request.args->size() : 0, " and ",
                             request.retvals ? request.retvals->size() : 0)));
  Start(request, options, metadata, std::move(done), caller_runs_first_root);
}

void Executor::Start(const ExecutorStep& request, const RunOptions& options, RunMetadata* metadata,
                     Done done, bool caller_runs_first_root) const {
  auto step = std::make_unique<Step>();
  step->values.resize(num_slots_);
  step->counters.reset(new std::atomic<int>[items_.size() + num_slots_]);
  step->pending = step->counters.get();
  step->readers_left = step->counters.get() + items_.size();
  for (size_t i = 0; i < items_.size(); ++i)
    step->pending[i].store(items_[i].num_in_edges, std::memory_order_relaxed);
  for (int s = 0; s < num_slots_; ++s)
    step->readers_left[s].store(slot_readers_[s], std::memory_order_relaxed);
  step->context = {request.step_id, resources_, request.args, request.retvals, request.rendezvous};
  step->trace = options.trace && metadata;
  step->on_fetch_ready = options.on_fetch_ready;
  step->metadata = metadata;
  step->done = std::move(done);
  if (step->trace) step->stats.resize(items_.size());
  if (metadata) device_->allocator()->ResetPeak();
  if (metadata) step->start = std::chrono::steady_clock::now();  // read only for metadata
  // The tasks that start the step: the Consts together, then each other root.
  const bool consts = !const_roots_.empty();
  const size_t tasks = roots_.size() + (consts ? 1 : 0);
  if (tasks == 0) {
    step->outstanding.store(1);
    return FinishOne(*step.release());
  }
  // RunAsync sends every task to the pool: its caller may be starting
  // several partitions and must not run one of them to the end first.
  Step& running = *step.release();  // deleted by the last FinishOne
  running.outstanding.store(static_cast<int>(tasks));
  auto start = [this, consts, &running](size_t task) {
    if (consts && task == 0) return ProcessConsts(running);
    Process(roots_[task - (consts ? 1 : 0)], running);
  };
  for (size_t task = caller_runs_first_root ? 1 : 0; task < tasks; ++task)
    device_->compute_pool()->Schedule([start, task] { start(task); });
  if (caller_runs_first_root) start(0);
}

// Runs the step's Consts one after another: a pool task each would wake a
// thread per Const, and a frozen graph has hundreds (an int8 one more). The
// consumers they make ready go to the pool, but the last, which this thread
// goes on with.
void Executor::ProcessConsts(Step& step) const {
  int next = -1;
  for (int item : const_roots_) {
    RunKernel(item, step);
    const int ready = PropagateOutputs(item, step);
    if (ready < 0) continue;
    if (next >= 0) {
      step.outstanding.fetch_add(1, std::memory_order_relaxed);
      device_->compute_pool()->Schedule([this, next, &step] { Process(next, step); });
    }
    next = ready;
  }
  if (next >= 0) return Process(next, step);
  FinishOne(step);
}

// Runs `item`, then keeps running one of the consumers it made ready while
// handing the others to the pool. An asynchronous kernel ends the chain: its
// completion picks the chain up again.
void Executor::Process(int item, Step& step) const {
  for (int current = item; current >= 0;) {
    if (items_[current].kernel->AsAsync() && !step.failed.load(std::memory_order_relaxed)) {
      StartAsync(current, step);
      break;
    }
    RunKernel(current, step);
    current = PropagateOutputs(current, step);
  }
  FinishOne(step);
}

// Releases `item`'s inputs and counts down its consumers; schedules all but
// one of those that became ready and returns that one (or -1).
int Executor::PropagateOutputs(int item, Step& step) const {
  ReleaseInputs(item, step);
  int next = -1;
  for (int consumer : items_[item].out_edges) {
    if (step.pending[consumer].fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
    if (next < 0) {
      next = consumer;
    } else {
      step.outstanding.fetch_add(1, std::memory_order_relaxed);
      device_->compute_pool()->Schedule([this, consumer, &step] { Process(consumer, step); });
    }
  }
  return next;
}

void Executor::StartAsync(int index, Step& step) const {
  const Item& item = items_[index];
  const Node& node = *item.node;
  auto call = std::make_shared<AsyncCall>();
  call->forwardable.reset(new bool[node.num_inputs() + 1]());
  for (int i = 0; i < node.num_inputs(); ++i) call->inputs.push_back(&step.values[item.input_slots[i]]);
  Tensor* outputs = node.num_outputs() ? &step.values[item.first_output_slot] : nullptr;
  call->ctx.emplace(node, *device_, step.context, call->inputs.data(), call->forwardable.get(),
                    outputs, item.host_outputs);
  call->start_ns = step.trace ? NanosSince(step.start) : 0;
  step.outstanding.fetch_add(1, std::memory_order_relaxed);  // released by the continuation
  auto resume = [this, index, &step, call](std::optional<Error> error) {
    // The callback may run on a sender's thread: hop to this device's pool so
    // the sender returns at once.
    device_->compute_pool()->Schedule([this, index, &step, call, error = std::move(error)] {
      if (error)
        RecordError(items_[index], step, error->code(), error->message());
      else
        CheckOutputs(index, step, call->start_ns);
      int next = PropagateOutputs(index, step);
      if (next >= 0) return Process(next, step);
      FinishOne(step);
    });
  };
  try {
    item.kernel->AsAsync()->ComputeAsync(*call->ctx, resume);
  } catch (const Error& e) {
    resume(e);
  } catch (const std::exception& e) {
    resume(Error(Code::kInternal, e.what()));
  }
}

// Counts one chain as ended; the last one reports the step.
void Executor::FinishOne(Step& step) const {
  if (step.outstanding.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::unique_ptr<Step> owned(&step);
  if (RunMetadata* metadata = owned->metadata) {
    metadata->step_ns = NanosSince(owned->start);
    metadata->start_clock_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   owned->start.time_since_epoch()).count();
    metadata->peak_bytes = device_->allocator()->stats().peak_bytes_in_use;
    metadata->step_stats.clear();
    for (int i : owned->completion_order) metadata->step_stats.push_back(std::move(owned->stats[i]));
  }
  Done done = std::move(owned->done);
  std::optional<Error> error = std::move(owned->error);
  owned.reset();
  done(std::move(error));
}

void Executor::RecordError(const Item& item, Step& step, Code code, const std::string& message) const {
  const Node& node = *item.node;
  std::string inputs;
  for (int i = 0; i < node.num_inputs(); ++i) {
    const Tensor& t = step.values[item.input_slots[i]];
    inputs += StrCat(i ? ", " : "", t.valid() ? t.SummaryString() : "<none>");
  }
  std::string full = StrCat(message, "\n  [[node ", node.name(), " (", node.op(), ") on ",
                            device_->name(), ", inputs: ", inputs, "]]");
  Error error(code, std::move(full));
  {
    std::lock_guard<std::mutex> lock(step.mu);
    if (!step.error) step.error.emplace(error);
    step.failed.store(true);
  }
  // Wakes the step's other partitions; a no-op when another error came first.
  if (step.context.rendezvous) step.context.rendezvous->StartAbort(error);
}

void Executor::RunKernel(int index, Step& step) const {
  const Item& item = items_[index];
  if (step.failed.load(std::memory_order_relaxed)) return;  // cancelled: skip the rest
  const Node& node = *item.node;
  constexpr int kMaxInline = 16;
  Tensor* inline_inputs[kMaxInline];
  bool inline_forwardable[kMaxInline];
  std::vector<Tensor*> heap_inputs;
  std::vector<char> heap_forwardable;
  Tensor** inputs = inline_inputs;
  bool* forwardable = inline_forwardable;
  int n = node.num_inputs();
  if (n > kMaxInline) {
    heap_inputs.resize(n);
    heap_forwardable.resize(n);
    inputs = heap_inputs.data();
    forwardable = reinterpret_cast<bool*>(heap_forwardable.data());
  }
  for (int i = 0; i < n; ++i) {
    int slot = item.input_slots[i];
    inputs[i] = &step.values[slot];
    forwardable[i] = item.input_slot_unique[i] &&
                     step.readers_left[slot].load(std::memory_order_relaxed) == 1;
    if (!inputs[i]->valid() && !item.input_is_ref[i]) {
      const Node& source = *node.input(i).node;
      if (source.def().is_variable)
        return RecordError(item, step, Code::kFailedPrecondition,
                           StrCat("variable '", source.name(),
                                  "' is uninitialised: run its initializer (an Assign) first"));
      return RecordError(item, step, Code::kInternal, StrCat("input ", i, " has no value"));
    }
  }
  Tensor* outputs = node.num_outputs() ? &step.values[item.first_output_slot] : nullptr;
  OpKernelContext ctx(node, *device_, step.context, inputs, forwardable, outputs, item.host_outputs);
  int64_t start_ns = step.trace ? NanosSince(step.start) : 0;
  try {
    item.kernel->Compute(ctx);
  } catch (const Error& e) {
    return RecordError(item, step, e.code(), e.message());
  } catch (const std::exception& e) {
    return RecordError(item, step, Code::kInternal, e.what());
  }
  CheckOutputs(index, step, start_ns);
}

// Checks that the kernel set its outputs, records its trace, and drops the
// outputs nobody reads.
void Executor::CheckOutputs(int index, Step& step, int64_t start_ns) const {
  const Item& item = items_[index];
  const Node& node = *item.node;
  for (int o = 0; o < node.num_outputs(); ++o) {
    int slot = item.first_output_slot + o;
    if (!step.values[slot].valid() && !node.def().is_variable)
      return RecordError(item, step, Code::kInternal, StrCat("kernel did not set output ", o));
    if (item.host_outputs && o < 64 && (item.host_outputs >> o & 1)) {
      const Allocator* where = step.values[slot].allocator();
      if (where && !where->host_accessible())
        return RecordError(item, step, Code::kInternal,
                           StrCat("output ", o, " is declared in host memory, the kernel gave device memory"));
    }
  }
  if (step.trace) {
    NodeExecStats& stats = step.stats[index];
    stats.node = node.name();
    stats.op = node.op();
    stats.device = device_->name();
    stats.start_ns = start_ns;
    stats.end_ns = NanosSince(step.start);
    stats.thread = SmallThreadId();
    stats.transfer = TransferOf(node);
    for (int o = 0; o < node.num_outputs(); ++o) {
      const Tensor& t = step.values[item.first_output_slot + o];
      stats.outputs.push_back(t.valid() ? t.SummaryString() : "<uninitialised>");
      if (t.valid()) stats.output_bytes += static_cast<int64_t>(t.TotalBytes());
    }
    std::lock_guard<std::mutex> lock(step.stats_mu);
    step.completion_order.push_back(index);
  }
  // Outputs nobody reads are dropped at once.
  for (int o = 0; o < node.num_outputs(); ++o)
    if (slot_readers_[item.first_output_slot + o] == 0) step.values[item.first_output_slot + o] = Tensor();
  if (item.retval_index >= 0 && step.on_fetch_ready) ReportFetch(index, step);
}

// A _Retval has written its fetch: the caller hears of it now, not at the
// end of the step. Each _Retval runs once per step, so each fetch is
// reported once; an exception from the callback is this node's error.
void Executor::ReportFetch(int index, Step& step) const {
  const Item& item = items_[index];
  size_t fetch = static_cast<size_t>(item.retval_index);
  try {
    step.on_fetch_ready(fetch, (*step.context.retvals)[fetch]);
  } catch (const Error& e) {
    RecordError(item, step, e.code(), StrCat("on_fetch_ready(", fetch, "): ", e.message()));
  } catch (const std::exception& e) {
    RecordError(item, step, Code::kInternal, StrCat("on_fetch_ready(", fetch, "): ", e.what()));
  }
}

void Executor::ReleaseInputs(int index, Step& step) const {
  const Item& item = items_[index];
  for (size_t i = 0; i < item.input_slots.size(); ++i) {
    if (item.input_is_ref[i]) continue;
    int slot = item.input_slots[i];
    if (step.readers_left[slot].fetch_sub(1, std::memory_order_acq_rel) == 1) step.values[slot] = Tensor();
  }
}

}  // namespace dflow

// The executor runs one partition of a graph on one device. It is built once
// per (graph, feeds, fetches) signature and then run many times, from several
// threads at once if the caller likes.
//
// How a step runs: every node starts with a count of its incoming edges
// (data and control). Nodes with none are ready. A worker runs a ready node's
// kernel, then decrements its consumers' counts; each consumer that reaches
// zero is ready. The worker keeps the first ready consumer for itself (no
// hand-off for a chain) and schedules the rest on the thread pool. Each
// output slot counts its remaining readers and drops its tensor when the
// last one has run, so memory is returned as early as the graph allows. The
// first error cancels the step: later nodes are skipped and Run throws it;
// when the step has a rendezvous, the error also aborts it, which wakes the
// step's other partitions. An asynchronous kernel (_Recv) holds no thread
// while it waits: its completion schedules the rest of its chain on the pool.
// When a _Retval has run, RunOptions::on_fetch_ready hears of its fetch on
// the same thread, while the rest of the step goes on.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "graph/graph.h"
#include "graph/kernel.h"
#include "graph/memory_types.h"
#include "graph/run_metadata.h"

namespace dflow {

// What one step gives one partition. A step of several partitions shares
// `args`, `retvals`, `step_id` and `rendezvous` among them.
struct ExecutorStep {
  int64_t step_id = 0;
  const std::vector<Tensor>* args = nullptr;  // every feed of the step; _Arg reads its index
  std::vector<Tensor>* retvals = nullptr;     // every fetch of the step; _Retval writes its index
  Rendezvous* rendezvous = nullptr;           // null when the partition is the whole step
};

// A fresh id for a step; unique within the process.
int64_t NewStepId();

class Executor {
 public:
  using Done = std::function<void(std::optional<Error> error)>;

  // `graph` holds only nodes placed on `device`; its _Arg nodes receive the
  // feeds and its _Retval nodes hand back the fetches, by their index attr.
  Executor(std::shared_ptr<Graph> graph, Device* device, ResourceStore* resources);
  ~Executor();

  int num_args() const { return num_args_; }
  int num_retvals() const { return num_retvals_; }
  const Graph& graph() const { return *graph_; }

  std::vector<Tensor> Run(const std::vector<Tensor>& args, const RunOptions& options = {},
                          RunMetadata* metadata = nullptr) const;
  // Starts one step and returns; calls `done` (on a pool thread, or here for
  // an empty graph) when every node has run or been skipped. `step`'s
  // pointers and `metadata` must outlive that call. A step whose `args` or
  // `retvals` is too short for the graph's indices ends here: `done` gets
  // kInvalidArgument. With `caller_runs_first_root` the calling thread runs
  // the first root's chain before returning (for a caller that would only
  // wait: a small graph then never touches the pool).
  void RunAsync(const ExecutorStep& step, const RunOptions& options, RunMetadata* metadata,
                Done done, bool caller_runs_first_root = false) const;

 private:
  struct Item;
  struct Step;
  void Start(const ExecutorStep& step, const RunOptions& options, RunMetadata* metadata, Done done,
             bool caller_runs_first_root) const;
  void Process(int item, Step& step) const;
  void ProcessConsts(Step& step) const;
  void StartAsync(int item, Step& step) const;
  void FinishOne(Step& step) const;
  int PropagateOutputs(int item, Step& step) const;
  void RunKernel(int item, Step& step) const;
  void CheckOutputs(int item, Step& step, int64_t start_ns) const;
  void ReportFetch(int item, Step& step) const;
  void ReleaseInputs(int item, Step& step) const;
  void RecordError(const Item& item, Step& step, Code code, const std::string& message) const;
  void CheckInputMemory(const std::vector<int>& item_of,
                        const std::vector<std::vector<MemoryType>>& input_memory) const;

  std::shared_ptr<Graph> graph_;
  Device* device_;
  ResourceStore* resources_;
  std::vector<Item> items_;
  std::vector<int> roots_;        // nodes without inputs, each started as a pool task
  std::vector<int> const_roots_;  // Consts without inputs, started together by one task
  std::vector<int> slot_readers_;  // data edges that read each output slot's value (refs do not)
  int num_slots_ = 0;
  int num_args_ = 0;
  int num_retvals_ = 0;
  int64_t arg_bound_ = 0;     // 1 + the largest _Arg index
  int64_t retval_bound_ = 0;  // 1 + the largest _Retval index
};

// Calls `start` with a done callback and waits until it has been called (from
// any thread, or from within `start`); throws the error it was called with.
// For callers of an asynchronous step that only wait for its end.
void StartAndWait(const std::function<void(Executor::Done done)>& start);

}  // namespace dflow

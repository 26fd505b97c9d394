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
// first error cancels the step: later nodes are skipped and Run throws it.
#pragma once

#include <memory>
#include <vector>

#include "graph/graph.h"
#include "graph/kernel.h"
#include "graph/run_metadata.h"

namespace dflow {

class Executor {
 public:
  // `graph` holds only nodes placed on `device`; its _Arg nodes receive the
  // feeds and its _Retval nodes hand back the fetches, by their index attr.
  Executor(std::unique_ptr<Graph> graph, Device* device, ResourceStore* resources);
  ~Executor();

  int num_args() const { return num_args_; }
  int num_retvals() const { return num_retvals_; }
  const Graph& graph() const { return *graph_; }

  std::vector<Tensor> Run(const std::vector<Tensor>& args, const RunOptions& options = {},
                          RunMetadata* metadata = nullptr) const;

 private:
  struct Item;
  struct Step;
  void Process(int item, Step& step) const;
  void RunKernel(int item, Step& step) const;
  void ReleaseInputs(int item, Step& step) const;
  void RecordError(const Item& item, Step& step, Code code, const std::string& message) const;

  std::unique_ptr<Graph> graph_;
  Device* device_;
  ResourceStore* resources_;
  std::vector<Item> items_;
  std::vector<int> roots_;
  std::vector<int> slot_readers_;  // data edges that read each output slot's value (refs do not)
  int num_slots_ = 0;
  int num_args_ = 0;
  int num_retvals_ = 0;
};

}  // namespace dflow

#include "graph/step_runner.h"

#include <chrono>
#include <memory>
#include <mutex>

namespace dflow {
namespace {

using Clock = std::chrono::steady_clock;

// What a step in flight keeps until its last partition is done.
struct StepProgress {
  Rendezvous* rendezvous = nullptr;
  RunMetadata* merged = nullptr;        // the caller's, when tracing
  std::vector<RunMetadata> partitions;  // one per partition, when tracing
  Clock::time_point start = Clock::now();
  StepDone done;
  std::mutex mu;
  size_t running = 0;
  std::optional<Error> first_error;
};

// The step's metadata: every partition's node stats on one timeline (each
// partition's times count from its own start: they are moved to count from
// the step's), the largest peak, and the step's wall time.
void MergeMetadata(StepProgress& progress) {
  RunMetadata& merged = *progress.merged;
  merged = {};
  merged.step_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - progress.start).count();
  merged.start_clock_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(progress.start.time_since_epoch()).count();
  for (RunMetadata& part : progress.partitions) {
    merged.peak_bytes = std::max(merged.peak_bytes, part.peak_bytes);
    int64_t shift = part.start_clock_ns != 0 ? part.start_clock_ns - merged.start_clock_ns : 0;
    for (NodeExecStats& stats : part.step_stats) {
      stats.start_ns += shift;
      stats.end_ns += shift;
      merged.step_stats.push_back(std::move(stats));
    }
  }
}

// One partition ended. Its error aborts the rendezvous (outside the lock:
// aborting runs Recv callbacks, which may end other partitions); the last
// one to end reports the step.
void PartitionDone(const std::shared_ptr<StepProgress>& progress, std::optional<Error> error) {
  if (error && progress->rendezvous) progress->rendezvous->StartAbort(*error);
  {
    std::lock_guard<std::mutex> lock(progress->mu);
    if (error && !progress->first_error) progress->first_error = std::move(error);
    if (--progress->running > 0) return;
  }
  if (progress->merged) MergeMetadata(*progress);
  // The rendezvous holds the first error of all: a partition's own error may
  // be just its Recv being aborted.
  std::optional<Error> origin = progress->rendezvous ? progress->rendezvous->abort_error() : std::nullopt;
  progress->done(origin ? std::move(origin) : std::move(progress->first_error));
}

// A step of one partition: nothing to join or merge, so the partition
// reports to `done` itself (the fast path of a small local step).
void StartOne(PartitionRunner& partition, const ExecutorStep& step, const RunOptions& options,
              RunMetadata* metadata, StepDone done, bool caller_joins) {
  Rendezvous* rendezvous = step.rendezvous;
  if (!rendezvous) return partition.RunAsync(step, options, metadata, std::move(done), caller_joins);
  partition.RunAsync(step, options, metadata,
                     [rendezvous, done = std::move(done)](std::optional<Error> error) {
                       if (error) {
                         rendezvous->StartAbort(*error);
                         error = rendezvous->abort_error();
                       }
                       done(std::move(error));
                     },
                     caller_joins);
}

}  // namespace

void StartStep(const std::vector<PartitionRunner*>& partitions, const ExecutorStep& step,
               const RunOptions& options, RunMetadata* metadata, StepDone done, bool caller_joins) {
  if (partitions.empty()) {
    if (metadata) *metadata = {};
    return done(std::nullopt);
  }
  if (partitions.size() == 1)
    return StartOne(*partitions.front(), step, options, metadata, std::move(done), caller_joins);
  auto progress = std::make_shared<StepProgress>();
  progress->rendezvous = step.rendezvous;
  progress->merged = metadata;
  if (metadata) progress->partitions.resize(partitions.size());
  progress->done = std::move(done);
  progress->running = partitions.size();
  for (size_t p = 0; p < partitions.size(); ++p) {
    RunMetadata* part = metadata ? &progress->partitions[p] : nullptr;
    bool joins = caller_joins && p + 1 == partitions.size();
    partitions[p]->RunAsync(step, options, part,
                            [progress](std::optional<Error> error) { PartitionDone(progress, std::move(error)); },
                            joins);
  }
}

void RunStep(const std::vector<PartitionRunner*>& partitions, const ExecutorStep& step,
             const RunOptions& options, RunMetadata* metadata) {
  // The arguments behind one pointer: the lambda fits in std::function
  // without a heap allocation.
  struct Args {
    const std::vector<PartitionRunner*>& partitions;
    const ExecutorStep& step;
    const RunOptions& options;
    RunMetadata* metadata;
  } args{partitions, step, options, metadata};
  StartAndWait([a = &args](StepDone done) {
    StartStep(a->partitions, a->step, a->options, a->metadata, std::move(done), /*caller_joins=*/true);
  });
}

}  // namespace dflow

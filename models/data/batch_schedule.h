// What the input pipelines (pipeline.h, detection_pipeline.h) share: which
// examples make each global step's batch, and a check of the options they
// have in common. The order of an epoch is a pure function of (seed, epoch),
// and a shard reads the positions i with i % num_shards == shard_index, so a
// run restarted at step s, or on another worker, sees the same batches.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graph/status.h"

namespace dflow::models {

struct ScheduleOptions {
  int64_t batch_size = 1;
  bool shuffle = true;
  // false: the epoch's last batch may be short. true: every shard makes the
  // batches of the smallest shard, so data-parallel workers stay in step.
  bool drop_remainder = true;
  int shard_index = 0, num_shards = 1;
  uint64_t seed = 1;
};

class BatchSchedule {
 public:
  // examples_of_epoch(e): the examples of epoch e before shuffling (indices
  // into the caller's list); every epoch must have as many. `owner` names the
  // pipeline in errors: kInvalidArgument when this shard has no examples or,
  // with drop_remainder, no full batch.
  BatchSchedule(std::string owner, ScheduleOptions options,
                std::function<std::vector<int64_t>(int64_t)> examples_of_epoch);

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  int64_t EpochOf(int64_t step) const { return step / batches_per_epoch_; }
  // Where a pipeline stops: after one epoch, or never when it repeats.
  std::optional<int64_t> EndStep(bool repeat) const {
    return repeat ? std::nullopt : std::optional<int64_t>(batches_per_epoch_);
  }
  // The examples of global step `step`, in batch order. Keeps the current
  // epoch's plan, so it is meant for one (producer) thread.
  std::vector<int64_t> ExamplesOf(int64_t step);

 private:
  std::vector<int64_t> EpochOrder(int64_t epoch) const;

  const std::string owner_;
  const ScheduleOptions options_;
  const std::function<std::vector<int64_t>(int64_t)> examples_of_epoch_;
  int64_t batches_per_epoch_ = 0;
  int64_t plan_epoch_ = -1;
  std::vector<int64_t> plan_;  // this shard's examples in plan_epoch_
};

// The checks both pipelines' option structs need, on the fields they share
// by name (batch_size, num_parallel_calls, prefetch_batches, shard_index,
// num_shards, start_step).
template <typename Options>
void CheckLoaderOptions(const std::string& owner, const Options& o) {
  DFLOW_REQUIRE(o.batch_size >= 1, owner, ": batch_size must be >= 1, got ", o.batch_size);
  DFLOW_REQUIRE(o.num_parallel_calls >= 1, owner, ": num_parallel_calls must be >= 1, got ",
                o.num_parallel_calls);
  DFLOW_REQUIRE(o.prefetch_batches >= 1, owner, ": prefetch_batches must be >= 1, got ",
                o.prefetch_batches);
  DFLOW_REQUIRE(o.num_shards >= 1 && o.shard_index >= 0 && o.shard_index < o.num_shards, owner,
                ": shard_index must be in [0, num_shards), got shard ", o.shard_index, " of ",
                o.num_shards);
  DFLOW_REQUIRE(o.start_step >= 0, owner, ": start_step must be >= 0, got ", o.start_step);
}

template <typename Options>
ScheduleOptions ScheduleOf(const Options& o) {
  return {o.batch_size, o.shuffle, o.drop_remainder, o.shard_index, o.num_shards, o.seed};
}

}  // namespace dflow::models

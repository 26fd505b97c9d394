// Epoch order, sharding and batch counting; see batch_schedule.h.
#include "models/data/batch_schedule.h"

#include <algorithm>

#include "models/data/seeded_random.h"

namespace dflow::models {
namespace {

constexpr uint64_t kShuffleStream = 0x5EAF;  // one of the seed's independent streams

}  // namespace

BatchSchedule::BatchSchedule(std::string owner, ScheduleOptions options,
                             std::function<std::vector<int64_t>(int64_t)> examples_of_epoch)
    : owner_(std::move(owner)),
      options_(options),
      examples_of_epoch_(std::move(examples_of_epoch)) {
  const ScheduleOptions& o = options_;
  // With drop_remainder every shard gets the batches of the smallest shard,
  // floor(M / num_shards) examples, so that synchronous data-parallel workers
  // take the same number of steps per epoch.
  const int64_t epoch_size = static_cast<int64_t>(examples_of_epoch_(0).size());
  const int64_t smallest_shard = epoch_size / o.num_shards;
  const int64_t this_shard = smallest_shard + (o.shard_index < epoch_size % o.num_shards ? 1 : 0);
  DFLOW_REQUIRE(this_shard > 0, owner_, ": shard ", o.shard_index, " of ", o.num_shards,
                " has no examples (", epoch_size, " examples per epoch)");
  batches_per_epoch_ = o.drop_remainder ? smallest_shard / o.batch_size
                                        : (this_shard + o.batch_size - 1) / o.batch_size;
  DFLOW_REQUIRE(batches_per_epoch_ > 0, owner_, ": batch_size ", o.batch_size,
                " is larger than the ", smallest_shard, " examples each of the ", o.num_shards,
                " shards has per epoch; with drop_remainder no batch would be made");
}

std::vector<int64_t> BatchSchedule::EpochOrder(int64_t epoch) const {
  std::vector<int64_t> order = examples_of_epoch_(epoch);
  if (options_.shuffle) {
    SeededRandom random(
        SeededRandom::Combine({options_.seed, static_cast<uint64_t>(epoch), kShuffleStream}));
    SeededShuffle(order, random);
  }
  return order;
}

std::vector<int64_t> BatchSchedule::ExamplesOf(int64_t step) {
  const int64_t epoch = EpochOf(step);
  if (epoch != plan_epoch_) {
    std::vector<int64_t> order = EpochOrder(epoch);
    plan_.clear();
    for (size_t i = options_.shard_index; i < order.size(); i += options_.num_shards)
      plan_.push_back(order[i]);
    plan_epoch_ = epoch;
  }
  const size_t first = static_cast<size_t>((step % batches_per_epoch_) * options_.batch_size);
  const size_t end = std::min(plan_.size(), first + static_cast<size_t>(options_.batch_size));
  return {plan_.begin() + static_cast<std::ptrdiff_t>(first),
          plan_.begin() + static_cast<std::ptrdiff_t>(end)};
}

}  // namespace dflow::models

// The prefetching input pipeline; see pipeline.h. One producer thread turns
// steps into batches, handing each batch's images to a pool of decode
// threads, and keeps up to prefetch_batches finished batches in a queue that
// Next() pops.
#include "models/data/pipeline.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>

#include "graph/thread_pool.h"
#include "models/data/seeded_random.h"
#include "models/data/tile_decoder.h"

namespace dflow::models {
namespace {

// Independent random streams drawn from one seed.
constexpr uint64_t kShuffleStream = 0x5EAF, kFlipStream = 0xF11B;

void CheckOptions(const PipelineOptions& o) {
  DFLOW_REQUIRE(o.batch_size >= 1, "InputPipeline: batch_size must be >= 1, got ", o.batch_size);
  DFLOW_REQUIRE(o.num_parallel_calls >= 1, "InputPipeline: num_parallel_calls must be >= 1, got ",
                o.num_parallel_calls);
  DFLOW_REQUIRE(o.prefetch_batches >= 1, "InputPipeline: prefetch_batches must be >= 1, got ",
                o.prefetch_batches);
  DFLOW_REQUIRE(o.num_shards >= 1 && o.shard_index >= 0 && o.shard_index < o.num_shards,
                "InputPipeline: shard_index must be in [0, num_shards), got shard ",
                o.shard_index, " of ", o.num_shards);
  DFLOW_REQUIRE(o.start_step >= 0, "InputPipeline: start_step must be >= 0, got ", o.start_step);
  // DensityMap's own limit, checked here so that a bad sigma fails at once.
  DFLOW_REQUIRE(o.sigma > 0 && o.sigma <= 100, "InputPipeline: sigma must be in (0, 100] pixels, got ",
                o.sigma);
  DFLOW_REQUIRE(!o.balance_bins || !o.bins.empty(),
                "InputPipeline: balance_bins is set but no count bins are given");
}

void CheckIndex(const TileIndex& index) {
  DFLOW_REQUIRE(index.tile_size > 0, "InputPipeline: the tile index has tile_size ",
                index.tile_size, "; build it with IndexTiles");
  DFLOW_REQUIRE(!index.tiles.empty(), "InputPipeline: the tile index has no tiles");
  DFLOW_REQUIRE(index.sizes.size() == index.images.size(), "InputPipeline: the tile index has ",
                index.images.size(), " images but ", index.sizes.size(), " image sizes");
  for (const TileExample& t : index.tiles)
    DFLOW_REQUIRE(t.image >= 0 && t.image < static_cast<int64_t>(index.images.size()),
                  "InputPipeline: a tile refers to image ", t.image, " of ", index.images.size());
}

// The tiles of one epoch, in the order every shard agrees on.
std::vector<int64_t> EpochOrder(const TileIndex& index, const PipelineOptions& o, int64_t epoch) {
  std::vector<int64_t> order;
  if (o.balance_bins) {
    std::vector<int64_t> counts;
    for (const TileExample& t : index.tiles) counts.push_back(t.count);
    order = BalancedSelection(counts, o.bins, o.seed, epoch);
  } else {
    order.resize(index.tiles.size());
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  if (o.shuffle) {
    SeededRandom random(SeededRandom::Combine({o.seed, static_cast<uint64_t>(epoch), kShuffleStream}));
    SeededShuffle(order, random);
  }
  return order;
}

// This shard's part of an epoch: positions i with i % num_shards == shard_index.
std::vector<int64_t> ShardOf(const std::vector<int64_t>& order, const PipelineOptions& o) {
  std::vector<int64_t> shard;
  for (size_t i = o.shard_index; i < order.size(); i += o.num_shards) shard.push_back(order[i]);
  return shard;
}

// With drop_remainder every shard gets the batches of the smallest shard,
// floor(M / num_shards) examples, so that synchronous data-parallel workers
// take the same number of steps per epoch.
int64_t CountBatches(int64_t epoch_size, const PipelineOptions& o) {
  int64_t smallest_shard = epoch_size / o.num_shards;
  int64_t this_shard = smallest_shard + (o.shard_index < epoch_size % o.num_shards ? 1 : 0);
  DFLOW_REQUIRE(this_shard > 0, "InputPipeline: shard ", o.shard_index, " of ", o.num_shards,
                " has no examples (", epoch_size, " tiles per epoch", 
                o.balance_bins ? " after balancing" : "", ")");
  int64_t batches = o.drop_remainder ? smallest_shard / o.batch_size
                                     : (this_shard + o.batch_size - 1) / o.batch_size;
  DFLOW_REQUIRE(batches > 0, "InputPipeline: batch_size ", o.batch_size, " is larger than the ",
                smallest_shard, " examples each of the ", o.num_shards,
                " shards has per epoch; with drop_remainder no batch would be made");
  return batches;
}

// Runs fn(0) .. fn(n - 1) on the pool and waits for all of them; the first
// exception is rethrown here.
void RunOnPool(ThreadPool& pool, size_t n, const std::function<void(size_t)>& fn) {
  std::mutex mu;
  std::condition_variable done;
  size_t remaining = n;
  std::exception_ptr error;
  for (size_t i = 0; i < n; ++i)
    pool.Schedule([&, i] {
      std::exception_ptr failure;
      try {
        fn(i);
      } catch (...) {
        failure = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu);
      if (failure && !error) error = failure;
      if (--remaining == 0) done.notify_all();
    });
  std::unique_lock<std::mutex> lock(mu);
  done.wait(lock, [&] { return remaining == 0; });
  if (error) std::rethrow_exception(error);
}

}  // namespace

struct InputPipeline::State {
  State(TileIndex index_in, PipelineOptions options_in)
      : index(std::move(index_in)),
        options(std::move(options_in)),
        cache(index, static_cast<size_t>(options.num_parallel_calls) + 2),
        decoders(options.num_parallel_calls, "input_pipeline") {}

  Batch MakeBatch(int64_t step);
  void DecodeInto(Batch& batch);
  bool Push(Batch batch);
  void Produce();

  const TileIndex index;
  const PipelineOptions options;
  int64_t batches_per_epoch = 0;
  DecodedImageCache cache;
  ThreadPool decoders;

  // The producer's current epoch and this shard's examples in it.
  int64_t plan_epoch = -1;
  std::vector<int64_t> plan;

  std::mutex mu;
  std::condition_variable changed;  // a batch was pushed or popped, or the state ended
  std::deque<Batch> ready;
  bool finished = false;            // the producer has returned
  std::exception_ptr error;         // why it returned early
  std::atomic<bool> stopping{false};
  std::thread producer;
};

Batch InputPipeline::State::MakeBatch(int64_t step) {
  Batch batch;
  batch.step = step;
  batch.epoch = step / batches_per_epoch;
  if (batch.epoch != plan_epoch) {
    plan = ShardOf(EpochOrder(index, options, batch.epoch), options);
    plan_epoch = batch.epoch;
  }
  size_t first = static_cast<size_t>((step % batches_per_epoch) * options.batch_size);
  size_t end = std::min(plan.size(), first + static_cast<size_t>(options.batch_size));
  for (size_t i = first; i < end; ++i) {
    batch.examples.push_back(index.tiles[plan[i]]);
    batch.counts.push_back(static_cast<double>(batch.examples.back().count));
  }
  DecodeInto(batch);
  return batch;
}

// Each decode task takes one image and all of the batch's tiles from it, so
// an image is decoded once per batch however many of its tiles were drawn.
void InputPipeline::State::DecodeInto(Batch& batch) {
  const int64_t b = static_cast<int64_t>(batch.examples.size()), s = index.tile_size;
  batch.images = Tensor(DType::kFloat32, Shape{b, s, s, 3});
  batch.density = Tensor(DType::kFloat32, Shape{b, s, s, 1});
  std::map<int64_t, std::vector<int64_t>> positions_of_image;
  for (int64_t j = 0; j < b; ++j) positions_of_image[batch.examples[j].image].push_back(j);
  std::vector<std::pair<int64_t, std::vector<int64_t>>> groups(positions_of_image.begin(),
                                                               positions_of_image.end());
  RunOnPool(decoders, groups.size(), [&](size_t g) {
    if (stopping) return;  // the batch will be thrown away
    Tensor pixels = cache.Get(groups[g].first);
    for (int64_t j : groups[g].second) {
      bool flip = options.flip &&
                  (SeededRandom::Combine({options.seed, static_cast<uint64_t>(batch.step),
                                          static_cast<uint64_t>(j), kFlipStream}) & 1);
      DecodeTile(index, batch.examples[j], pixels, options.sigma, flip,
                 batch.images.data<float>() + j * s * s * 3, batch.density.data<float>() + j * s * s);
    }
  });
}

// Waits for room in the queue; false when the pipeline is being destroyed.
bool InputPipeline::State::Push(Batch batch) {
  std::unique_lock<std::mutex> lock(mu);
  changed.wait(lock, [&] {
    return stopping || ready.size() < static_cast<size_t>(options.prefetch_batches);
  });
  if (stopping) return false;
  ready.push_back(std::move(batch));
  changed.notify_all();
  return true;
}

void InputPipeline::State::Produce() {
  try {
    for (int64_t step = options.start_step; !stopping; ++step) {
      if (!options.repeat && step >= batches_per_epoch) break;
      if (!Push(MakeBatch(step))) break;
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu);
    error = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(mu);
  finished = true;
  changed.notify_all();
}

InputPipeline::InputPipeline(TileIndex index, PipelineOptions options) {
  CheckOptions(options);
  CheckIndex(index);
  state_ = std::make_unique<State>(std::move(index), std::move(options));
  // Balancing draws the same number per bin every epoch, so epoch 0's size
  // is every epoch's.
  int64_t epoch_size = static_cast<int64_t>(EpochOrder(state_->index, state_->options, 0).size());
  state_->batches_per_epoch = CountBatches(epoch_size, state_->options);
  state_->producer = std::thread([state = state_.get()] { state->Produce(); });
}

InputPipeline::~InputPipeline() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
  }
  state_->changed.notify_all();
  state_->producer.join();  // the decode pool's remaining tasks see `stopping` and return
}

std::optional<Batch> InputPipeline::Next() {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->changed.wait(lock, [&] { return !state_->ready.empty() || state_->finished; });
  if (!state_->ready.empty()) {
    Batch batch = std::move(state_->ready.front());
    state_->ready.pop_front();
    state_->changed.notify_all();
    return batch;
  }
  if (state_->error) std::rethrow_exception(state_->error);
  return std::nullopt;
}

int64_t InputPipeline::batches_per_epoch() const { return state_->batches_per_epoch; }

}  // namespace dflow::models

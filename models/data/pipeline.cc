// The prefetching input pipeline; see pipeline.h. One producer thread turns
// steps into batches, handing each batch's images to a pool of decode
// threads, and keeps up to prefetch_batches finished batches in a queue that
// Next() pops.
#include "models/data/pipeline.h"

#include <map>
#include <numeric>

#include "models/data/batch_schedule.h"
#include "models/data/prefetch_queue.h"
#include "models/data/seeded_random.h"
#include "models/data/tile_decoder.h"

namespace dflow::models {
namespace {

// Independent random streams drawn from one seed (the shuffle's is BatchSchedule's).
constexpr uint64_t kFlipStream = 0xF11B;

void CheckOptions(const PipelineOptions& o) {
  CheckLoaderOptions("InputPipeline", o);
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

// The tiles of one epoch before shuffling: all of them, or a balanced draw.
std::vector<int64_t> EpochTiles(const TileIndex& index, const PipelineOptions& o, int64_t epoch) {
  std::vector<int64_t> tiles;
  if (o.balance_bins) {
    std::vector<int64_t> counts;
    for (const TileExample& t : index.tiles) counts.push_back(t.count);
    tiles = BalancedSelection(counts, o.bins, o.seed, epoch);
    // Balancing draws the same number per bin every epoch, so epoch 0's size
    // is every epoch's.
    DFLOW_REQUIRE(!tiles.empty(), "InputPipeline: no examples are left after balancing over ",
                  o.bins.size(), " count bins");
  } else {
    tiles.resize(index.tiles.size());
    std::iota(tiles.begin(), tiles.end(), int64_t{0});
  }
  return tiles;
}

}  // namespace

struct InputPipeline::State {
  State(TileIndex index_in, PipelineOptions options_in)
      : index(std::move(index_in)),
        options(std::move(options_in)),
        schedule("InputPipeline", ScheduleOf(options),
                 [this](int64_t epoch) { return EpochTiles(index, options, epoch); }),
        cache(index, static_cast<size_t>(options.num_parallel_calls) + 2),
        decoders(options.num_parallel_calls, "input_pipeline"),
        queue(options.prefetch_batches) {}

  Batch MakeBatch(int64_t step);
  void DecodeInto(Batch& batch);

  const TileIndex index;
  const PipelineOptions options;
  BatchSchedule schedule;  // used by the producer thread only
  DecodedImageCache cache;
  ThreadPool decoders;
  PrefetchQueue<Batch> queue;  // last: destroyed first, stopping the producer
};

Batch InputPipeline::State::MakeBatch(int64_t step) {
  Batch batch;
  batch.step = step;
  batch.epoch = schedule.EpochOf(step);
  for (int64_t tile : schedule.ExamplesOf(step)) {
    batch.examples.push_back(index.tiles[tile]);
    batch.counts.push_back(static_cast<double>(batch.examples.back().count));
  }
  DecodeInto(batch);
  return batch;
}

void InputPipeline::State::DecodeInto(Batch& batch) {
  const int64_t b = static_cast<int64_t>(batch.examples.size()), s = index.tile_size;
  batch.images = Tensor(DType::kFloat32, Shape{b, s, s, 3});
  batch.density = Tensor(DType::kFloat32, Shape{b, s, s, 1});
  std::map<int64_t, std::vector<int64_t>> positions_of_image;
  for (int64_t j = 0; j < b; ++j) positions_of_image[batch.examples[j].image].push_back(j);
  std::vector<std::pair<int64_t, std::vector<int64_t>>> groups(positions_of_image.begin(),
                                                               positions_of_image.end());
  RunOnPool(decoders, groups.size(), [&](size_t g) {
    if (queue.stopping()) return;  // the batch will be thrown away
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

InputPipeline::InputPipeline(TileIndex index, PipelineOptions options) {
  CheckOptions(options);
  CheckIndex(index);
  state_ = std::make_unique<State>(std::move(index), std::move(options));
  State* state = state_.get();
  state->queue.Start([state](int64_t step) { return state->MakeBatch(step); },
                     state->options.start_step, state->schedule.EndStep(state->options.repeat));
}

InputPipeline::~InputPipeline() = default;  // the queue joins the producer first

std::optional<Batch> InputPipeline::Next() { return state_->queue.Pop(); }

int64_t InputPipeline::batches_per_epoch() const { return state_->schedule.batches_per_epoch(); }

}  // namespace dflow::models

// The counting app's input pipeline (the flower-counting thesis, sec. 4.4): annotated images
// of any size are cut into fixed-size tiles, optionally balanced over count
// bins, shuffled, decoded in parallel, batched and prefetched on a background
// thread, and sharded so that each data-parallel worker reads its own part.
//
// The order of examples is a pure function of (seed, epoch, shard), so a
// run restarted at step s sees exactly the batches it would have seen.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/tensor.h"
#include "models/data/image.h"
#include "models/data/points_dataset.h"
#include "models/data/tiler.h"
#include "models/metrics/counting.h"

namespace dflow::models {

// One training example: a tile of one image and the points inside it.
struct TileExample {
  int64_t image = 0;  // index into TileIndex::images
  TileSpec tile;
  int64_t count = 0;  // points inside the tile
};

struct TileIndex {
  std::vector<AnnotatedImage> images;
  std::vector<ImageInfo> sizes;  // one per image, from its header
  std::vector<TileExample> tiles;
  int64_t tile_size = 0;
};

// Reads each image's header (not its pixels), checks that every point lies
// inside its image (kInvalidArgument naming the file and the point) and cuts
// it into tile_size x tile_size tiles (TileGrid). Unreadable or corrupt
// images are errors naming the file; an empty list is kInvalidArgument.
TileIndex IndexTiles(std::vector<AnnotatedImage> images, int64_t tile_size);

// Seed 004's balancing (sec. 4.1.1): tiles are grouped by the bin of their
// count and the same number is drawn from every non-empty bin (the size of
// the smallest), without replacement. Returns indices into `counts`, in bin
// order; epoch e draws afresh from (seed, e), so over epochs every tile of a
// large bin gets used. Counts in no bin are left out.
std::vector<int64_t> BalancedSelection(const std::vector<int64_t>& counts,
                                       const std::vector<CountBin>& bins, uint64_t seed,
                                       int64_t epoch);

struct PipelineOptions {
  int64_t batch_size = 8;
  double sigma = 2.0;            // density-map Gaussian, pixels
  bool shuffle = true;
  bool balance_bins = false;     // BalancedSelection over `bins` each epoch
  std::vector<CountBin> bins = DefaultCountBins();
  bool flip = false;             // random horizontal flips (training)
  bool repeat = true;            // false: Next() ends after one epoch
  // false: the epoch's last batch may be short. true: every shard makes the
  // batches of the smallest shard, so data-parallel workers stay in step.
  bool drop_remainder = true;
  int num_parallel_calls = 2;    // decode threads
  int prefetch_batches = 3;      // ready batches kept ahead (the seed uses 3)
  int shard_index = 0, num_shards = 1;  // this worker reads examples i % n == k
  uint64_t seed = 1;
  int64_t start_step = 0;        // resume: the first batch returned is this one
};

struct Batch {
  Tensor images;                      // float32 [B, S, S, 3], values in [0, 1]
  Tensor density;                     // float32 [B, S, S, 1]; each sums to its count
  std::vector<double> counts;         // B true counts
  std::vector<TileExample> examples;  // where each came from
  int64_t step = 0;                   // the global batch number (start_step + i)
  int64_t epoch = 0;
};

class InputPipeline {
 public:
  // Starts the background thread; the first batch is being prepared on return.
  // kInvalidArgument for bad options (batch_size < 1, shard outside [0, n),
  // no examples in this shard, ...).
  InputPipeline(TileIndex index, PipelineOptions options);
  // Stops and joins the background threads; never blocks on a full queue.
  ~InputPipeline();
  InputPipeline(const InputPipeline&) = delete;
  InputPipeline& operator=(const InputPipeline&) = delete;

  // The next batch; std::nullopt at the end (repeat = false). An error while
  // preparing a batch (a corrupt image, ...) is rethrown here, naming the file;
  // the pipeline then stays failed.
  std::optional<Batch> Next();

  // Batches in one epoch of this shard (after balancing, drop_remainder).
  int64_t batches_per_epoch() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dflow::models

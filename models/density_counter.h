// The counting app's model (the flower-counting thesis): CountNet with its placeholders, the
// seed's loss, an Adam train op and the per-image counts, in one graph that
// serves training, evaluation and prediction; plus prediction on images of
// any size by tiling, batching the tiles and stitching their density maps.
//
//   DensityCounter model = BuildDensityCounter(scope, {.tile_size = 224});
//   Session session(scope);
//   session.Run({}, {}, {model.init});
//   session.Run({{model.images, batch.images}, {model.target, batch.density}},
//               {model.loss}, {model.train});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "graph/session.h"

namespace dflow::models {

struct DensityCounterOptions {
  int64_t tile_size = 224;      // a multiple of 4 (two pools, two x2 upsamplings)
  double learning_rate = 1e-3;  // Adam
  // Cosine-decay the learning rate to 5% over this many steps (0: constant).
  int64_t decay_steps = 0;
  // Multiplies the density maps the network learns (and divides its output
  // back): a Gaussian of sigma 2 peaks at ~0.04, which the last layer's
  // small initial weights reach slowly; a larger target scale trains faster.
  double density_scale = 100.0;
  // Data-parallel training: `train` applies gradients fed to
  // `gradient_feeds` (their mean over the workers) instead of computing them;
  // `gradients` are fetched. false leaves the graph as single-process training has it.
  bool fed_gradients = false;
  // Parameter-server training: the caller adds the optimizer and the
  // initialiser (dist::PsWorker does, from `loss`, `variables` and
  // `learning_rate`), so `train` and `init` stay null. Not with fed_gradients.
  bool external_optimizer = false;
};

struct DensityCounter {
  Output images;   // float32 [N, S, S, 3] in [0, 1], fed
  Output target;   // float32 [N, S, S, 1] ground-truth density, fed
  Output density;  // float32 [N, S, S, 1] predicted density (unscaled)
  Output counts;   // float32 [N]: the sum of each predicted map
  Output loss;     // the seed's loss on the scaled maps
  Output global_step;
  Output learning_rate;   // float32 scalar: the schedule `train`'s Adam uses
  Node* train = nullptr;  // one Adam step (null with external_optimizer)
  // With fed_gradients: this worker's gradients (fetched) and the
  // placeholders `train` reads, one per trained variable, in `variables` order.
  std::vector<Output> gradients, gradient_feeds;
  Node* init = nullptr;   // initialises every variable (null with external_optimizer)
  Output density_scale;   // float32 scalar variable, not trained
  std::vector<Output> variables;  // the network's weights (trained)
  int64_t tile_size = 0;

  // What prediction needs from a checkpoint: the weights and the scale.
  std::vector<std::string> ModelVariableNames() const;
};

DensityCounter BuildDensityCounter(const Scope& scope, const DensityCounterOptions& options);

// The density map of a uint8 [H, W, 3] image of any size: the image is cut
// into tiles (CoveringTiles: the last row and column overlap their
// neighbours rather than run into zero padding, which the network would
// answer with false density along the edge), run through the network
// `batch` tiles at a time, and the maps stitched into float32 [H, W].
Tensor PredictDensity(Session& session, const DensityCounter& model, const Tensor& image,
                      int64_t batch = 8);

// The image as float32 [H, W, 3] in [0, 1].
Tensor ToUnitFloat(const Tensor& image);

}  // namespace dflow::models

// A training run's settings, kept as RUN/config.json so that a run can be
// resumed, evaluated and reproduced from its directory alone.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/common/data_parallel_settings.h"
#include "apps/common/run_files.h"

namespace dflow::count_app {

using apps::ConfigPath;

struct TrainSettings {
  std::string data;  // dataset directory (points.json or points.csv), absolute once recorded
  std::string out;   // run directory
  int64_t steps = 0;  // total steps; 0: from epochs
  double epochs = 0;
  int64_t batch = 8;
  int64_t tile = 224;
  double sigma = 2.0;             // ground-truth Gaussian, pixels
  double learning_rate = 2e-3;    // Adam, cosine-decayed to 5% over the run (docs/counting.md)
  double density_scale = 100.0;   // see models/density_counter.h
  bool balance = false;           // the flower-counting thesis's count-bin balancing (--balance)
  std::string bins = "0,1,2,3,4,5-7,8+";
  bool flip = true;               // random horizontal flips
  int threads = 2;                // compute threads
  // The device the graph runs on: empty for the CPU, "/device:GPU:0". Not
  // recorded, like the resources below: a run may be resumed on another.
  std::string device;
  int decode_threads = 1;         // input pipeline decode threads
  int prefetch = 3;               // batches prefetched
  int64_t checkpoint_every = 50;  // steps
  int keep = 3;                   // checkpoints kept
  uint64_t seed = 1;
  apps::DataParallelSettings parallel;  // not recorded (apps/common/workers.h)
  // Derived when the run starts, recorded for eval's baseline.
  int64_t total_steps = 0;
  int64_t batches_per_epoch = 0;
  int64_t train_images = 0, train_tiles = 0;
  double train_mean_count = 0;       // points per training image
  double train_count_per_pixel = 0;  // points per pixel over the training images
  apps::DatasetIdentity dataset;     // checked on --resume (apps/common/run_files.h)
};

nlohmann::json ToJson(const TrainSettings& settings);
// Throws kInvalidArgument naming `source` and the field when a value is
// missing or of the wrong type.
TrainSettings TrainSettingsFromJson(const nlohmann::json& json, const std::string& source);

// RUN/config.json, written atomically.
void WriteConfig(const TrainSettings& settings);
TrainSettings ReadConfig(const std::string& run_dir);

}  // namespace dflow::count_app

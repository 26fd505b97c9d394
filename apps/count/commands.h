// The subcommands of dflow-count (apps/count/main.cc parses the flags).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/count/run_config.h"

namespace dflow::count_app {

struct GenerateSettings {
  std::string out;
  int64_t images = 100;
  int64_t width = 448, height = 448;
  int max_flowers = 50;
  bool distractors = true;
  uint64_t seed = 1;
};
int Generate(const GenerateSettings& settings);

// `resume`: continue RUN from its config.json and latest checkpoint; only
// `steps`/`epochs` (a longer run) may be given with it.
int Train(TrainSettings settings, bool resume);

struct EvalSettings {
  std::string data;
  std::string checkpoint;  // a .safetensors file, a run directory or a checkpoint directory
  std::string bins = "0,1,2,3,4,5-7,8+";
  std::string metrics = "metrics.json";
  double train_mean_count = -1;  // < 0: from the run's config.json
  int threads = 2;
  std::string device;  // empty: the CPU
};
int Eval(const EvalSettings& settings);

struct PredictSettings {
  std::string checkpoint;
  std::vector<std::string> inputs;  // image files or directories of images
  std::string heatmap_dir;          // empty: no heatmaps
  std::string csv;                  // empty: no CSV
  int threads = 2;
  std::string device;               // empty: the CPU
};
int Predict(const PredictSettings& settings);

}  // namespace dflow::count_app

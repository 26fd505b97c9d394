// dflow-count: density-map counting (the flower-counting thesis) from images to counts and
// heatmaps. Subcommands: generate, train, eval, predict (see --help).
#include <iostream>

#include <CLI/CLI.hpp>

#include "apps/common/cli_checks.h"
#include "apps/common/program.h"
#include "apps/common/train_options.h"
#include "apps/count/commands.h"
#include "apps/common/workers.h"
#include "dist/transport/zmq_transport.h"
#include "graph/status.h"

namespace {

using namespace dflow::count_app;
using dflow::apps::AtLeast;
using dflow::apps::IntegerRange;
using dflow::apps::PositiveReal;
using dflow::apps::ThreadCount;

// Bounds of `generate`, like kMaxGeneratedImages: far beyond a useful
// synthetic field, small enough that a mistyped value fails at once.
constexpr int64_t kMaxSide = 8192;
constexpr int64_t kMaxFlowers = 10000;

void AddGenerate(CLI::App& app, GenerateSettings& s) {
  app.add_option("--out", s.out, "Directory to write the images and points.json to")->required();
  app.add_option("--images", s.images, "Number of images")->check(IntegerRange(1, dflow::apps::kMaxGeneratedImages));
  app.add_option("--width", s.width, "Image width, pixels")->check(IntegerRange(1, kMaxSide));
  app.add_option("--height", s.height, "Image height, pixels")->check(IntegerRange(1, kMaxSide));
  app.add_option("--max-flowers", s.max_flowers, "Flowers per image are uniform in [0, this]")
      ->check(IntegerRange(0, kMaxFlowers));
  app.add_flag("!--no-distractors", s.distractors, "Leave out specular patches and road strips");
  app.add_option("--seed", s.seed, "Seed: the same seed gives the same images");
}

// The options that fix a run; --resume takes them from RUN/config.json.
dflow::apps::TrainOptionGroups AddTrain(CLI::App& app, TrainSettings& s) {
  app.add_option("--data", s.data, "Dataset directory (points.json or points.csv)");
  app.add_option("--out", s.out, "Run directory: config.json and checkpoints/")->required();
  app.add_option("--steps", s.steps, "Training steps (default: none; give this or --epochs)")->check(AtLeast(1));
  app.add_option("--epochs", s.epochs, "Training epochs (default: none; used when --steps is not given)")
      ->check(PositiveReal());
  std::vector<CLI::Option*> fixed = {
      app.get_option("--data"),
      app.add_option("--batch", s.batch, "Tiles per batch")->check(AtLeast(1)),
      app.add_option("--tile", s.tile, "Tile size, a multiple of 4")->check(AtLeast(4)),
      app.add_option("--sigma", s.sigma, "Ground-truth Gaussian sigma, pixels")
          ->check(PositiveReal()),
      app.add_option("--lr", s.learning_rate, "Adam learning rate (cosine-decayed to 5%)")
          ->check(PositiveReal()),
      app.add_option("--density-scale", s.density_scale, "Scale of the learned density maps")
          ->check(PositiveReal()),
      app.add_flag("--balance", s.balance,
                   "Balance the count bins by sampling, as the flower-counting thesis does (for datasets skewed to few counts)"),
      app.add_option("--bins", s.bins, "Count bins for balancing, e.g. 0,1,2,3,4,5-7,8+"),
      app.add_flag("!--no-flip", s.flip, "No random horizontal flips"),
      app.add_option("--seed", s.seed, "Seed of initialisation and data order"),
  };
  return {fixed, dflow::apps::AddTrainingResourceOptions(app, s)};
}

void AddEval(CLI::App& app, EvalSettings& s) {
  app.add_option("--data", s.data, "Dataset directory (points.json or points.csv)")->required();
  app.add_option("--checkpoint", s.checkpoint, "Checkpoint file, checkpoint directory or run")
      ->required();
  app.add_option("--bins", s.bins, "Count bins, e.g. 0,1,2,3,4,5-7,8+");
  app.add_option("--metrics", s.metrics, "Where to write the metrics JSON");
  app.add_option("--train-mean", s.train_mean_count,
                 "The baseline's count per image (default: from the run's config.json)");
  app.add_option("--threads", s.threads, "Compute threads")->check(ThreadCount());
  dflow::apps::AddDeviceOption(app, s.device);
}

void AddPredict(CLI::App& app, PredictSettings& s) {
  app.add_option("--checkpoint", s.checkpoint, "Checkpoint file, checkpoint directory or run")
      ->required();
  app.add_option("inputs", s.inputs, "Image files or directories of images")->required();
  app.add_option("--heatmap", s.heatmap_dir, "Directory for density heatmaps (PNG)");
  app.add_option("--csv", s.csv, "CSV file of the counts");
  app.add_option("--threads", s.threads, "Compute threads")->check(ThreadCount());
  dflow::apps::AddDeviceOption(app, s.device);
}

}  // namespace

int main(int argc, char** argv) {
  dflow::dist::KeepFreedMemoryForReceives();  // distributed training receives tensors
  CLI::App app("dflow-count: count objects with density maps (an MCNN-style counting network, after a thesis on counting flowers)");
  dflow::apps::SetUpProgram(app, "dflow-count");
  app.require_subcommand(1);
  GenerateSettings generate;
  AddGenerate(*app.add_subcommand("generate", "Write a synthetic field dataset"), generate);
  TrainSettings train;
  bool resume = false;
  CLI::App* train_app = app.add_subcommand("train", "Train a counter");
  dflow::apps::TrainOptionGroups train_options = AddTrain(*train_app, train);
  train_app->add_flag("--resume", resume, "Continue the run in --out from its last checkpoint");
  EvalSettings eval;
  AddEval(*app.add_subcommand("eval", "Evaluate a checkpoint on a dataset"), eval);
  PredictSettings predict;
  AddPredict(*app.add_subcommand("predict", "Count images"), predict);
  dflow::apps::HideEmptyDefaults(app);
  CLI11_PARSE(app, argc, argv);
  try {
    if (app.got_subcommand("generate")) return Generate(generate);
    if (app.got_subcommand("train")) {
      dflow::apps::CheckStrategy(train.parallel);  // also with one worker, which does not use it
      if (dflow::apps::ShouldLaunchWorkers(train.parallel)) {
        dflow::apps::RequireCpuWhenDistributed(train.device);
        dflow::apps::LaunchWorkers(train.parallel, argc, argv);
      }
      if (resume) return Train(dflow::apps::ResumeSettings(train, train_options, ReadConfig), true);
      DFLOW_REQUIRE(!train.data.empty(), "train: --data is required");
      return Train(train, false);
    }
    if (app.got_subcommand("eval")) return Eval(eval);
    return Predict(predict);
  } catch (const dflow::Error& e) {
    std::cerr << "dflow-count: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {  // filesystem errors name their paths too
    std::cerr << "dflow-count: " << e.what() << "\n";
    return 1;
  }
}

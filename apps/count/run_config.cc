// RUN/config.json; see run_config.h.
#include "apps/count/run_config.h"

#include "apps/common/run_files.h"
#include "graph/status.h"

namespace dflow::count_app {

// One list of fields serves both directions (apps/common/run_files.h).
constexpr auto kForEachField = [](auto& json, auto& s, auto visit) {
  visit(json, "data", s.data);
  visit(json, "out", s.out);
  visit(json, "steps", s.steps);
  visit(json, "epochs", s.epochs);
  visit(json, "batch", s.batch);
  visit(json, "tile", s.tile);
  visit(json, "sigma", s.sigma);
  visit(json, "learning_rate", s.learning_rate);
  visit(json, "density_scale", s.density_scale);
  visit(json, "balance", s.balance);
  visit(json, "bins", s.bins);
  visit(json, "flip", s.flip);
  visit(json, "threads", s.threads);
  visit(json, "decode_threads", s.decode_threads);
  visit(json, "prefetch", s.prefetch);
  visit(json, "checkpoint_every", s.checkpoint_every);
  visit(json, "keep", s.keep);
  visit(json, "seed", s.seed);
  visit(json, "total_steps", s.total_steps);
  visit(json, "batches_per_epoch", s.batches_per_epoch);
  visit(json, "train_images", s.train_images);
  visit(json, "train_tiles", s.train_tiles);
  visit(json, "train_mean_count", s.train_mean_count);
  visit(json, "train_count_per_pixel", s.train_count_per_pixel);
  visit(json, "dataset", s.dataset, apps::kAddedLater);  // unrecorded in older runs
};

nlohmann::json ToJson(const TrainSettings& settings) {
  return apps::FieldsToJson(settings, kForEachField);
}

TrainSettings TrainSettingsFromJson(const nlohmann::json& json, const std::string& source) {
  return apps::FieldsFromJson<TrainSettings>(json, source, kForEachField);
}

void WriteConfig(const TrainSettings& settings) { apps::WriteConfigJson(settings.out, ToJson(settings)); }

TrainSettings ReadConfig(const std::string& run_dir) {
  std::string path = ConfigPath(run_dir);
  return TrainSettingsFromJson(apps::ReadJsonFile(path), path);
}

}  // namespace dflow::count_app

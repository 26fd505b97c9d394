// RUN/config.json; see run_config.h.
#include "apps/count/run_config.h"

#include <filesystem>

#include "graph/file.h"
#include "graph/status.h"

namespace dflow::count_app {

// One list of fields serves both directions, so a new setting cannot be
// written without being read back.
template <typename Json, typename Settings, typename Visit>
void ForEachField(Json& json, Settings& s, Visit visit) {
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
}

nlohmann::json ToJson(const TrainSettings& settings) {
  nlohmann::json json = nlohmann::json::object();
  ForEachField(json, settings, [](nlohmann::json& j, const char* key, const auto& value) {
    j[key] = value;
  });
  return json;
}

TrainSettings TrainSettingsFromJson(const nlohmann::json& json, const std::string& source) {
  DFLOW_REQUIRE(json.is_object(), source, ": expected a JSON object");
  TrainSettings settings;
  ForEachField(json, settings, [&](const nlohmann::json& j, const char* key, auto& value) {
    DFLOW_REQUIRE(j.contains(key), source, ": missing \"", key, "\"");
    try {
      j.at(key).get_to(value);
    } catch (const nlohmann::json::exception&) {
      Fail(Code::kInvalidArgument, source, ": \"", key, "\" has the wrong type (",
           j.at(key).dump(), ")");
    }
  });
  return settings;
}

std::string ConfigPath(const std::string& run_dir) {
  return (std::filesystem::path(run_dir) / "config.json").string();
}

void WriteConfig(const TrainSettings& settings) {
  std::filesystem::create_directories(settings.out);
  WriteFileAtomic(ConfigPath(settings.out), ToJson(settings).dump(2) + "\n");
}

TrainSettings ReadConfig(const std::string& run_dir) {
  std::string path = ConfigPath(run_dir);
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(ReadFileToString(path));
  } catch (const nlohmann::json::parse_error& e) {
    Fail(Code::kInvalidArgument, path, " is not valid JSON: ", e.what());
  }
  return TrainSettingsFromJson(json, path);
}

}  // namespace dflow::count_app

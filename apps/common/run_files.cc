// Run directories; see run_files.h.
#include "apps/common/run_files.h"

#include <filesystem>

#include "graph/file.h"
#include "graph/json.h"
#include "models/checkpoint.h"

namespace dflow::apps {

namespace fs = std::filesystem;

std::string ConfigPath(const std::string& run_dir) { return (fs::path(run_dir) / "config.json").string(); }

void WriteConfigJson(const std::string& run_dir, const nlohmann::json& config) {
  fs::create_directories(run_dir);
  WriteFileAtomic(ConfigPath(run_dir), config.dump(2) + "\n");
}

nlohmann::json ReadJsonFile(const std::string& path) {
  return ParseJson(ReadFileToString(path), path);
}

std::string ResolveCheckpoint(const std::string& path) {
  if (!fs::exists(path)) Fail(Code::kNotFound, "checkpoint ", path, " does not exist");
  if (!fs::is_directory(path)) return path;
  for (const fs::path& dir : {fs::path(path), fs::path(path) / "checkpoints"})
    if (std::optional<std::string> latest = LatestCheckpoint(dir.string())) return *latest;
  Fail(Code::kNotFound, "no checkpoint in ", path, " (nor in ", (fs::path(path) / "checkpoints").string(),
       ")");
}

std::string RunDirOf(const std::string& checkpoint_file) {
  fs::path run = fs::path(checkpoint_file).parent_path().parent_path();
  return fs::exists(ConfigPath(run.string())) ? run.string() : std::string();
}

}  // namespace dflow::apps

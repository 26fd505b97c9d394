// Run directories; see run_files.h.
#include "apps/common/run_files.h"

#include <cstdio>
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

std::optional<std::string> LatestExistingCheckpoint(const std::string& dir) {
  std::optional<std::string> latest = LatestCheckpoint(dir);
  // Said here: restoring a missing file would be blamed on the checkpoint's contents.
  if (latest && !fs::exists(*latest))
    Fail(Code::kNotFound, "the checkpoint index of ", dir, " names ", fs::path(*latest).filename().string(),
         " as the latest checkpoint, but ", *latest, " does not exist (deleted or not copied?)");
  return latest;
}

std::string ResolveCheckpoint(const std::string& path) {
  if (!fs::exists(path)) Fail(Code::kNotFound, "checkpoint ", path, " does not exist");
  if (!fs::is_directory(path)) return path;
  for (const fs::path& dir : {fs::path(path), fs::path(path) / "checkpoints"})
    if (std::optional<std::string> latest = LatestExistingCheckpoint(dir.string())) return *latest;
  Fail(Code::kNotFound, "no checkpoint in ", path, " (nor in ", (fs::path(path) / "checkpoints").string(),
       ")");
}

std::string AbsolutePath(const std::string& path) { return fs::absolute(path).lexically_normal().string(); }

void to_json(nlohmann::json& json, const DatasetIdentity& identity) {
  json = {{"images", identity.images}, {"index_hash", identity.index_hash}};
}

void from_json(const nlohmann::json& json, DatasetIdentity& identity) {
  json.at("images").get_to(identity.images);
  json.at("index_hash").get_to(identity.index_hash);
}

DatasetIdentity IdentifyDataset(int64_t images, const std::vector<std::string>& index_lines) {
  // FNV-1a: a resume compares the data with what the run saw, it does not
  // defend against forgery, so a simple, stable 64-bit hash is enough.
  uint64_t hash = 0xcbf29ce484222325ull;
  auto add = [&hash](unsigned char byte) { hash = (hash ^ byte) * 0x100000001b3ull; };
  for (const std::string& line : index_lines) {
    for (char c : line) add(static_cast<unsigned char>(c));
    add('\n');
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return {images, hex};
}

void CheckSameDataset(const DatasetIdentity& recorded, const DatasetIdentity& found, const std::string& data,
                      const std::string& config) {
  if (recorded.index_hash.empty() || recorded == found) return;
  std::string what = recorded.images != found.images
                         ? StrCat("it has ", found.images, " images where the run trained on ", recorded.images)
                         : StrCat("its annotations differ (index hash ", found.index_hash, ", recorded ",
                                  recorded.index_hash, ")");
  Fail(Code::kFailedPrecondition, "train --resume: the dataset ", data, " is not the one this run trained on (",
       config, "): ", what);
}

std::string RunDirOf(const std::string& checkpoint_file) {
  fs::path run = fs::path(checkpoint_file).parent_path().parent_path();
  return fs::exists(ConfigPath(run.string())) ? run.string() : std::string();
}

}  // namespace dflow::apps

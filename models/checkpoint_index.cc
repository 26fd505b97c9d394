// The index of a checkpoint directory ("checkpoint.json"): which file is the
// latest, which are kept, and the pruning of old ones (max_to_keep).
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "graph/file.h"
#include "graph/json.h"
#include "models/checkpoint.h"

namespace dflow {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string IndexPath(const std::string& dir) {
  return (fs::path(dir) / kCheckpointIndexName).string();
}

// Index entries are plain file names: pruning deletes them, so a name that
// could reach outside the directory is refused.
bool IsPlainCheckpointName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != ".." &&
         name.ends_with(".safetensors");
}

// "<prefix>.safetensors" or "<prefix>-<step>.safetensors" with an integer step.
bool BelongsToPrefix(std::string_view name, std::string_view prefix) {
  constexpr std::string_view kExt = ".safetensors";
  if (!name.starts_with(prefix) || !name.ends_with(kExt)) return false;
  std::string_view middle = name.substr(prefix.size(), name.size() - prefix.size() - kExt.size());
  if (middle.empty()) return true;
  if (middle[0] != '-') return false;
  middle.remove_prefix(1);
  if (!middle.empty() && middle[0] == '-') middle.remove_prefix(1);  // a negative step
  return !middle.empty() &&
         std::all_of(middle.begin(), middle.end(), [](char c) { return c >= '0' && c <= '9'; });
}

[[noreturn]] void BadIndex(const std::string& dir, std::string_view what) {
  Fail(Code::kDataLoss, "'", IndexPath(dir), "': malformed checkpoint index: ", what);
}

}  // namespace

CheckpointIndex ReadCheckpointIndex(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(IndexPath(dir), ec)) return {};
  json root;
  try {
    root = ParseJson(ReadFileToString(IndexPath(dir)), IndexPath(dir));
  } catch (const Error& e) {
    if (e.code() != Code::kInvalidArgument) throw;  // unreadable, not malformed
    BadIndex(dir, e.message());
  }
  if (!root.is_object()) BadIndex(dir, "not a JSON object");
  auto latest = root.find("latest");
  auto all = root.find("all");
  if (latest == root.end() || !latest->is_string()) BadIndex(dir, "'latest' is not a string");
  if (all == root.end() || !all->is_array()) BadIndex(dir, "'all' is not a list");
  CheckpointIndex index{latest->get<std::string>(), {}};
  for (const json& name : *all) {
    if (!name.is_string() || !IsPlainCheckpointName(name.get<std::string>()))
      BadIndex(dir, StrCat("entry ", JsonForMessage(name), " is not a .safetensors file name"));
    index.all.push_back(name.get<std::string>());
  }
  if (!index.latest.empty() && !IsPlainCheckpointName(index.latest))
    BadIndex(dir, StrCat("'latest' (\"", index.latest, "\") is not a .safetensors file name"));
  return index;
}

void WriteCheckpointIndex(const std::string& dir, const CheckpointIndex& index) {
  std::string text = json{{"latest", index.latest}, {"all", index.all}}.dump(2) + "\n";
  WriteFileDurable(IndexPath(dir), {text});
}

void RecordCheckpoint(const std::string& dir, const std::string& file, std::string_view prefix,
                      int max_to_keep) {
  CheckpointIndex index = ReadCheckpointIndex(dir);
  std::erase(index.all, file);  // saved again: it moves to the newest place
  index.all.push_back(file);
  index.latest = file;
  std::vector<std::string> doomed;
  if (max_to_keep > 0) {
    auto of_prefix = [&](const std::string& name) { return BelongsToPrefix(name, prefix); };
    auto count = std::count_if(index.all.begin(), index.all.end(), of_prefix);
    for (auto it = index.all.begin(); count > max_to_keep;) {
      if (!of_prefix(*it)) {
        ++it;
        continue;
      }
      doomed.push_back(*it);
      it = index.all.erase(it);
      --count;
    }
  }
  WriteCheckpointIndex(dir, index);
  // A file that is already gone is fine; one that cannot be removed only costs disk.
  std::error_code ec;
  for (const std::string& name : doomed) fs::remove(fs::path(dir) / name, ec);
}

std::optional<std::string> LatestCheckpoint(const std::string& dir) {
  CheckpointIndex index = ReadCheckpointIndex(dir);
  if (index.latest.empty()) return std::nullopt;
  return (fs::path(dir) / index.latest).string();
}

}  // namespace dflow

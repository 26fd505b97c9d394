// What the apps' run directories share: RUN/config.json holds a run's
// settings as one JSON object whose fields are listed once (ForEachField:
// a function visiting (json, "key", value) for every field), so a setting
// cannot be written without being read back; checkpoints live in
// RUN/checkpoints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/status.h"

namespace dflow::apps {

std::string ConfigPath(const std::string& run_dir);
// Creates RUN and writes RUN/config.json atomically.
void WriteConfigJson(const std::string& run_dir, const nlohmann::json& config);

// The file's JSON; kNotFound when it cannot be read, kInvalidArgument
// naming the file when it is not JSON.
nlohmann::json ReadJsonFile(const std::string& path);

// The latest checkpoint in `dir` by its index (nullopt: none saved there);
// kNotFound when the index names a file that does not exist.
std::optional<std::string> LatestExistingCheckpoint(const std::string& dir);

// `path` as a checkpoint file: a .safetensors file itself, or the latest
// checkpoint of a checkpoint directory or of a run directory
// (RUN/checkpoints). kNotFound names the path when there is none.
std::string ResolveCheckpoint(const std::string& path);

// The run directory a checkpoint belongs to (RUN for RUN/checkpoints/x), or
// empty when it has no config.json.
std::string RunDirOf(const std::string& checkpoint_file);

// `path` made absolute (and normal) against the current directory, so that
// a run records where its data is, not where it was seen from.
std::string AbsolutePath(const std::string& path);

// What a run records of its dataset, so that a resume notices other data
// under the recorded path: the number of images and a hash of the index
// (the annotations as loaded, one line per image or object, in order).
struct DatasetIdentity {
  int64_t images = 0;
  std::string index_hash;  // 16 hex digits (64-bit FNV-1a); empty: not recorded
  bool operator==(const DatasetIdentity&) const = default;
};
void to_json(nlohmann::json& json, const DatasetIdentity& identity);
void from_json(const nlohmann::json& json, DatasetIdentity& identity);

DatasetIdentity IdentifyDataset(int64_t images, const std::vector<std::string>& index_lines);
// kFailedPrecondition naming `data`, `config` and what differs when `found`
// is not the `recorded` dataset; a run that recorded none is not checked.
void CheckSameDataset(const DatasetIdentity& recorded, const DatasetIdentity& found, const std::string& data,
                      const std::string& config);

template <typename Settings, typename ForEachField>
nlohmann::json FieldsToJson(const Settings& settings, ForEachField for_each_field) {
  nlohmann::json json = nlohmann::json::object();
  for_each_field(json, settings, [](nlohmann::json& j, const char* key, const auto& value, bool = false) {
    j[key] = value;
  });
  return json;
}

// A field list passes this after a field that runs written before it was
// added lack: reading such a run keeps the field's default.
inline constexpr bool kAddedLater = true;

// Every field must be present and of its type: kInvalidArgument names
// `source` and the field otherwise, except the fields marked kAddedLater.
template <typename Settings, typename ForEachField>
Settings FieldsFromJson(const nlohmann::json& json, const std::string& source,
                        ForEachField for_each_field) {
  DFLOW_REQUIRE(json.is_object(), source, ": expected a JSON object");
  Settings settings;
  for_each_field(json, settings, [&](const nlohmann::json& j, const char* key, auto& value,
                                     bool added_later = false) {
    if (added_later && !j.contains(key)) return;
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

}  // namespace dflow::apps

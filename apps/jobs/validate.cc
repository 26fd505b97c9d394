#include "apps/jobs/validate.h"

#include <charconv>
#include <filesystem>

#include "graph/file.h"
#include "graph/json.h"
#include "graph/status.h"

namespace dflow::jobs {
namespace {

namespace fs = std::filesystem;

const std::map<std::string, std::vector<std::string>>& Models() {
  static const std::map<std::string, std::vector<std::string>> models = {
      {"count", {"countnet"}},
      {"detect", {"ssd-mobilenet", "ssd-squeezenet", "retinanet-resnet18", "retinanet-resnet50"}}};
  return models;
}

const Json& Field(const Json& body, const std::string& name) {
  if (!body.contains(name)) Fail(Code::kInvalidArgument, "missing field \"", name, "\"");
  return body[name];
}

std::string Name(const Json& body, const std::string& field) {
  const Json& value = Field(body, field);
  if (!value.is_string()) Fail(Code::kInvalidArgument, "\"", field, "\" must be a string");
  std::string name = value.get<std::string>();
  bool ok = !name.empty() && name.size() <= 64 && name != "." && name != "..";
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-');
  if (!ok)
    Fail(Code::kInvalidArgument, "\"", field, "\" must be 1 to 64 letters, digits, '_', '.' or '-', got \"",
         CutForMessage(name), "\"");
  return name;
}

int64_t Number(const Json& body, const std::string& field, int64_t lo, int64_t hi, std::optional<int64_t> fallback) {
  if (!body.contains(field) && fallback) return *fallback;
  const Json& value = Field(body, field);
  if (!value.is_number_integer() || value.get<int64_t>() < lo || value.get<int64_t>() > hi)
    Fail(Code::kInvalidArgument, "\"", field, "\" must be an integer in ", lo, "..", hi, ", got ",
         CutForMessage(value.dump()));
  return value.get<int64_t>();
}

std::string OneOf(const Json& body, const std::string& field, const std::vector<std::string>& allowed,
                  std::optional<std::string> fallback) {
  if (!body.contains(field) && fallback) return *fallback;
  const Json& value = Field(body, field);
  std::string list;
  for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
  if (!value.is_string() || std::find(allowed.begin(), allowed.end(), value.get<std::string>()) == allowed.end())
    Fail(Code::kInvalidArgument, "\"", field, "\" must be one of ", list, ", got ", CutForMessage(value.dump()));
  return value.get<std::string>();
}

}  // namespace

Json ParseBody(const std::string& body) {
  constexpr size_t kMaxJson = size_t{1} << 20;
  if (body.size() > kMaxJson)
    Fail(Code::kInvalidArgument, "the request body is larger than ", kMaxJson, " bytes");
  Json parsed = ParseJson<Json>(body, "the request body");
  if (!parsed.is_object()) Fail(Code::kInvalidArgument, "the request body must be a JSON object");
  return parsed;
}

Dataset DatasetFromRequest(const Json& body, const std::string& data_root) {
  Dataset d;
  d.name = Name(body, "name");
  std::vector<std::string> apps;
  for (const auto& [app, models] : Models()) apps.push_back(app);
  d.app = OneOf(body, "app", apps, std::nullopt);
  const Json& path = Field(body, "path");
  if (!path.is_string() || path.get<std::string>().empty())
    Fail(Code::kInvalidArgument, "\"path\" must be a folder inside the data root");
  const fs::path root = fs::weakly_canonical(data_root);
  const fs::path given = path.get<std::string>();
  const fs::path resolved = fs::weakly_canonical(given.is_absolute() ? given : root / given);
  auto [end, unused] = std::mismatch(root.begin(), root.end(), resolved.begin(), resolved.end());
  if (end != root.end())
    Fail(Code::kInvalidArgument, "\"path\" ", CutForMessage(given.string()), " is outside the data root ",
         root.string());
  if (!fs::is_directory(resolved))
    Fail(Code::kInvalidArgument, "\"path\" ", CutForMessage(given.string()), " is not a folder in the data root");
  d.path = resolved.string();
  return d;
}

JobSpec JobSpecFromRequest(const Json& body) {
  JobSpec s;
  s.name = Name(body, "name");
  std::vector<std::string> apps;
  for (const auto& [app, models] : Models()) apps.push_back(app);
  s.app = OneOf(body, "app", apps, std::nullopt);
  s.model = OneOf(body, "model", Models().at(s.app), Models().at(s.app).front());
  s.dataset_id = Number(body, "dataset_id", 1, int64_t{1} << 40, std::nullopt);
  s.eval_dataset_id = Number(body, "eval_dataset_id", 0, int64_t{1} << 40, 0);
  s.steps = Number(body, "steps", 1, 10'000'000, std::nullopt);
  s.batch = Number(body, "batch", 1, 4096, 8);
  s.checkpoint_every = Number(body, "checkpoint_every", 1, 10'000'000, std::max<int64_t>(1, s.steps / 10));
  s.workers = static_cast<int>(Number(body, "workers", 1, 64, 1));
  s.strategy = OneOf(body, "strategy", {"ring", "ps"}, "ring");
  s.ps = static_cast<int>(Number(body, "ps", 0, 16, s.strategy == "ps" ? 1 : 0));
  if (s.strategy == "ps" && s.ps < 1) Fail(Code::kInvalidArgument, "\"ps\" must be at least 1 with strategy ps");
  if (s.strategy == "ring" && s.ps != 0) Fail(Code::kInvalidArgument, "\"ps\" goes with strategy ps");
  s.backend = OneOf(body, "backend", {"local", "mpirun", "slurm"}, "local");
  if (body.contains("nodes")) {
    const Json& nodes = body["nodes"];
    if (!nodes.is_array() || nodes.size() > 256) Fail(Code::kInvalidArgument, "\"nodes\" must be a list of hosts");
    for (size_t i = 0; i < nodes.size(); ++i) s.nodes.push_back(Name(Json{{"node", nodes[i]}}, "node"));
  }
  return s;
}

Node NodeFromRequest(const Json& body) {
  Node node;
  node.name = Name(body, "name");
  node.info = {{"cores", Number(body, "cores", 0, 1 << 20, 0)},
               {"memory_bytes", Number(body, "memory_bytes", 0, int64_t{1} << 56, 0)},
               {"gpus", Json::array()}};
  if (body.contains("load")) {
    if (!body["load"].is_number()) Fail(Code::kInvalidArgument, "\"load\" must be a number");
    node.info["load"] = body["load"];
  }
  if (body.contains("gpus")) {
    if (!body["gpus"].is_array() || body["gpus"].size() > 64) Fail(Code::kInvalidArgument, "\"gpus\" must be a list");
    for (const Json& gpu : body["gpus"]) {
      if (!gpu.is_string() || gpu.get<std::string>().size() > 200)
        Fail(Code::kInvalidArgument, "\"gpus\" must list GPU names");
      node.info["gpus"].push_back(gpu);
    }
  }
  return node;
}

int64_t ParseOffset(const std::string& text) {
  int64_t offset = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), offset);
  if (ec != std::errc() || end != text.data() + text.size() || offset < 0)
    Fail(Code::kInvalidArgument, "offset must be a byte offset, got '", CutForMessage(text), "'");
  return offset;
}

Json ModelsJson() {
  Json out = Json::array();
  for (const auto& [app, models] : Models()) out.push_back({{"app", app}, {"models", models}});
  return out;
}

std::string ReadStatic(const std::string& path) {
  if (!fs::is_regular_file(path)) Fail(Code::kNotFound, path, " is missing");
  return ReadFileToString(path);
}

}  // namespace dflow::jobs

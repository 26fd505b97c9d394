// Saver: variables to a safetensors checkpoint and back, through Session::Run.
#include "models/checkpoint.h"

#include <filesystem>
#include <set>

#include "models/safetensors.h"
#include "ops/state.h"

namespace dflow {
namespace {

namespace fs = std::filesystem;

// Splits what Save was given into a directory and a file-name prefix.
std::pair<fs::path, std::string> SplitPrefix(const std::string& dir_or_prefix) {
  DFLOW_REQUIRE(!dir_or_prefix.empty(), "Saver::Save: empty checkpoint path");
  std::error_code ec;
  fs::path path(dir_or_prefix);
  if (dir_or_prefix.back() == '/' || fs::is_directory(path, ec)) return {path, "model"};
  fs::path dir = path.parent_path();
  return {dir.empty() ? fs::path(".") : dir, path.filename().string()};
}

}  // namespace

struct Saver::PlannedAssign {
  const SavedVariable* variable;
  const TensorEntry* entry;
};

Saver::Saver(const Scope& scope, const std::vector<Output>& variables, SaverOptions options)
    : options_(options) {
  std::vector<Output> chosen = variables;
  if (chosen.empty())
    for (Node* node : scope.graph().nodes())
      if (node->op() == "VariableV2") chosen.emplace_back(node);
  DFLOW_REQUIRE(!chosen.empty(), "Saver: the graph has no variables to save");
  Scope save_scope = scope.NewSubScope("save");
  for (const Output& variable : chosen) AddVariable(save_scope, variable);
}

Saver::Saver(const Scope& scope, SaverOptions options) : Saver(scope, {}, options) {}

void Saver::AddVariable(const Scope& save_scope, const Output& variable) {
  DFLOW_REQUIRE(variable.node() && variable.node()->op() == "VariableV2", "Saver: '",
                variable.node() ? variable.name() : "<null>",
                "' is not a variable (a VariableV2 output)");
  const std::string& name = variable.node()->name();
  for (const SavedVariable& saved : variables_)
    DFLOW_REQUIRE(saved.name != name, "Saver: variable '", name, "' is listed twice");
  // The restore ops sit on the variable's device, next to the value they replace.
  Scope here = save_scope.WithDevice(variable.node()->requested_device());
  Output value =
      ops::Placeholder(here.WithOpName(name + "/value"), variable.dtype(), variable.shape());
  Output assign = ops::Assign(here.WithOpName(name + "/assign"), variable, value);
  variables_.push_back({name, variable, value, assign.node()});
}

std::vector<std::string> Saver::variable_names() const {
  std::vector<std::string> names;
  for (const SavedVariable& saved : variables_) names.push_back(saved.name);
  return names;
}

std::string Saver::Save(Session& session, const std::string& dir_or_prefix,
                        std::optional<int64_t> global_step) const {
  auto [dir, prefix] = SplitPrefix(dir_or_prefix);
  fs::create_directories(dir);
  std::string file = global_step ? StrCat(prefix, "-", *global_step, ".safetensors")
                                 : StrCat(prefix, ".safetensors");
  std::vector<Tensor> values = Values(session);
  std::vector<NamedTensor> tensors;
  for (size_t i = 0; i < variables_.size(); ++i) tensors.push_back({variables_[i].name, values[i]});
  Metadata metadata;
  if (global_step) metadata["global_step"] = std::to_string(*global_step);
  std::string path = (dir / file).string();
  WriteSafetensors(path, tensors, metadata);
  RecordCheckpoint(dir.string(), file, prefix, options_.max_to_keep);
  return path;
}

std::vector<Tensor> Saver::Values(Session& session) const {
  std::vector<TensorName> fetches;
  for (const SavedVariable& saved : variables_) fetches.emplace_back(saved.variable);
  return session.Run({}, fetches);
}

void Saver::Assign(Session& session, const std::vector<Tensor>& values) const {
  DFLOW_REQUIRE(values.size() == variables_.size(), "Saver::Assign: ", values.size(), " values for ",
                variables_.size(), " variables");
  FeedList feeds;
  std::vector<TensorName> targets;
  for (size_t i = 0; i < values.size(); ++i) {
    const SavedVariable& saved = variables_[i];
    DFLOW_REQUIRE(values[i].dtype() == saved.variable.dtype() &&
                      saved.variable.shape().IsCompatibleWith(values[i].shape()),
                  "Saver::Assign: variable '", saved.name, "' is ", DTypeName(saved.variable.dtype()), " ",
                  saved.variable.shape().ToString(), ", the value is ", DTypeName(values[i].dtype()), " ",
                  values[i].shape().ToString());
    feeds.emplace_back(saved.value, values[i]);
    targets.emplace_back(saved.assign);
  }
  session.Run(feeds, {}, targets);
}

// Matches the variables to restore with the file's tensors, checking
// presence, dtype and shape; reads no tensor data.
std::vector<Saver::PlannedAssign> Saver::PlanRestore(const SafetensorsReader& reader,
                                                     const RestoreOptions& options) const {
  std::set<std::string> known;
  for (const SavedVariable& saved : variables_) known.insert(saved.name);
  for (const auto& [name, unused] : options.name_map)
    if (!known.count(name))
      Fail(Code::kNotFound, "restore: name_map lists '", name, "', which this Saver does not save");
  std::set<std::string> only(options.only.begin(), options.only.end());
  for (const std::string& name : only)
    if (!known.count(name))
      Fail(Code::kNotFound, "restore: 'only' lists '", name, "', which this Saver does not save");

  std::vector<PlannedAssign> plan;
  for (const SavedVariable& saved : variables_) {
    if (!only.empty() && !only.count(saved.name)) continue;
    auto mapped = options.name_map.find(saved.name);
    const std::string& stored = mapped == options.name_map.end() ? saved.name : mapped->second;
    std::string what = stored == saved.name
                           ? StrCat("variable '", saved.name, "'")
                           : StrCat("variable '", saved.name, "' (as '", stored, "')");
    const TensorEntry* entry = reader.Find(stored);
    if (!entry) Fail(Code::kNotFound, "'", reader.path(), "': ", what, " is not in the checkpoint");
    if (entry->dtype != saved.variable.dtype())
      Fail(Code::kInvalidArgument, "'", reader.path(), "': ", what, " is ",
           DTypeName(saved.variable.dtype()), " in the graph but ", DTypeName(entry->dtype),
           " in the checkpoint");
    if (!saved.variable.shape().IsCompatibleWith(entry->shape))
      Fail(Code::kInvalidArgument, "'", reader.path(), "': ", what, " has shape ",
           saved.variable.shape().ToString(), " in the graph but ", entry->shape.ToString(),
           " in the checkpoint");
    plan.push_back({&saved, entry});
  }
  return plan;
}

void Saver::Restore(Session& session, const std::string& path,
                    const RestoreOptions& options) const {
  SafetensorsReader reader(path);
  std::vector<PlannedAssign> plan = PlanRestore(reader, options);
  // Every tensor is read and its checksum verified before the first assign.
  FeedList feeds;
  std::vector<TensorName> targets;
  for (const PlannedAssign& step : plan) {
    feeds.emplace_back(step.variable->value, reader.Read(*step.entry));
    targets.emplace_back(step.variable->assign);
  }
  session.Run(feeds, {}, targets);
}

}  // namespace dflow

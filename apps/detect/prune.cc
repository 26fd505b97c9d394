// dflow-detect prune; see prune.h.
#include "apps/detect/prune.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "apps/common/run_files.h"
#include "apps/common/workers.h"
#include "apps/detect/commands.h"
#include "apps/detect/training.h"
#include "models/data/text_numbers.h"
#include "models/layers.h"
#include "models/safetensors.h"

namespace dflow::detect_app {
namespace {

namespace fs = std::filesystem;

bool Masked(const std::string& mode) { return mode == "l1-unstructured" || mode == "l1-global"; }

// The network a checkpoint holds: its run's settings, its inference graph
// (which names the variables) and the variables' values.
struct CheckpointNetwork {
  TrainSettings settings;
  std::unique_ptr<DetectorGraph> graph;
  models::TensorsByName values;
};

CheckpointNetwork ReadNetwork(const std::string& checkpoint) {
  const std::string run = apps::RunDirOf(checkpoint);
  if (run.empty())
    Fail(Code::kNotFound, "prune: ", checkpoint, " is not inside a dflow-detect run directory ",
         "(RUN/checkpoints/ next to RUN/config.json)");
  CheckpointNetwork net{.settings = ReadConfig(run), .graph = nullptr, .values = {}};
  net.graph = BuildInferenceGraph(net.settings, {});
  SafetensorsReader reader(checkpoint);
  for (const std::string& name : VariableNames(net.graph->scope.graph())) {
    const TensorEntry* entry = reader.Find(name);
    if (!entry)
      Fail(Code::kInvalidArgument, checkpoint, " has no \"", name, "\": it is not a checkpoint of the ",
           net.settings.model, " network that ", ConfigPath(run), " describes");
    net.values[name] = reader.Read(*entry);
  }
  return net;
}

// The channels each prunable layer keeps.
std::map<std::string, std::vector<int64_t>> KeptChannels(const CheckpointNetwork& net, double sparsity) {
  return models::ChooseChannels(ChannelGroups(net.settings), net.values, sparsity);
}

// The pruned network's starting values: channels removed, or the pruned
// weights zeroed and their masks beside them.
models::TensorsByName PrunedValues(CheckpointNetwork& net, const TrainSettings& s) {
  if (s.prune == "channels") {
    const std::vector<models::ChannelGroup> groups = ChannelGroups(net.settings);
    const auto kept = models::ChooseChannels(groups, net.values, s.sparsity);
    return models::PruneChannels(groups, kept, std::move(net.values));
  }
  models::TensorsByName weights;
  for (const Output& w : PrunableWeights(net.graph->net)) weights[w.node()->name()] = net.values.at(w.node()->name());
  const models::PruneScope scope = s.prune == "l1-global" ? models::PruneScope::kGlobal : models::PruneScope::kPerLayer;
  for (auto& [name, mask] : models::L1UnstructuredMasks(weights, s.sparsity, scope)) {
    net.values[name] = models::ApplyMask(net.values[name], mask);
    net.values[name + kPruneMaskSuffix] = std::move(mask);
  }
  return std::move(net.values);
}

// The new run: the pruned run's network and recipe, what prune was given,
// and the pruning (with the thinner layers' channel counts).
TrainSettings PrunedRunSettings(const PruneSettings& p, const CheckpointNetwork& source, const std::string& checkpoint) {
  const TrainSettings& given = p.run;
  TrainSettings s = source.settings;
  s.out = given.out;
  s.data = given.data.empty() ? source.settings.data : given.data;
  s.steps = given.steps;
  s.epochs = given.epochs;
  // Removing channels changes every layer's inputs: it retrains at the
  // model's full rate; zeroed weights fine-tune at a tenth (bench/RESULTS.md).
  const double rate = DefaultLearningRate(s.model);
  s.learning_rate = given.learning_rate > 0 ? given.learning_rate : p.mode == "channels" ? rate : rate / 10;
  s.warmup_steps = -1;
  s.freeze.clear();  // the pruned backbone adapts too
  s.init_from.clear();
  s.init_map.clear();
  s.teacher.clear();
  s.teacher_classes = 0;
  s.distill_from.clear();  // fine-tuned on the data alone
  StartNewRun(s, given);
  s.dataset = {};
  s.prune = p.mode;
  s.sparsity = p.sparsity;
  s.pruned_from = checkpoint;
  if (p.mode == "channels")
    for (const auto& [layer, kept] : KeptChannels(source, p.sparsity))
      s.channels[layer] = static_cast<int64_t>(kept.size());
  return s;
}

}  // namespace

void InitFromPruned(Session& session, const DetectorGraph& g, const Saver& saver, const TrainSettings& s) {
  CheckpointNetwork source = ReadNetwork(s.pruned_from);
  const std::vector<Output> weights = PrunableWeights(source.graph->net);
  const int64_t before = models::CountParameters(source.graph->net.variables);
  const int64_t after = models::CountParameters(g.net.variables);
  // Through a file and the Saver, so that the values reach the variables on
  // whichever device they live.
  std::vector<NamedTensor> tensors;
  RestoreOptions restore;
  int64_t zeros = 0;
  for (auto& [name, value] : PrunedValues(source, s)) {
    if (Masked(s.prune) && name.ends_with(kPruneMaskSuffix))
      zeros += std::count(value.data<float>(), value.data<float>() + value.NumElements(), 0.0f);
    restore.only.push_back(name);
    tensors.push_back({name, std::move(value)});
  }
  const std::string path = (fs::path(s.out) / "start.safetensors").string();
  WriteSafetensors(path, tensors);
  saver.Restore(session, path, restore);
  fs::remove(path);
  std::cout << "from " << s.pruned_from << ", " << s.prune << " at " << models::FormatNumber(100 * s.sparsity)
            << "%: ";
  if (Masked(s.prune))
    std::cout << zeros << " of " << models::CountParameters(weights) << " weights are zero, kept zero while training\n";
  else if (after == before)
    std::cout << "every channel kept (the unpruned control), " << after << " parameters\n";
  else
    std::cout << s.channels.size() << " layers thinned, " << before << " -> " << after << " parameters\n";
}

void CheckPruneSettings(const PruneSettings& p) {
  DFLOW_REQUIRE(p.mode == "channels" || Masked(p.mode), "prune: --mode takes l1-unstructured, l1-global or ",
                "channels, got \"", p.mode, "\"");
  DFLOW_REQUIRE(p.sparsity >= 0 && p.sparsity < 1, "prune: --sparsity is the share pruned, within [0, 1), got ",
                p.sparsity);
  DFLOW_REQUIRE(!Masked(p.mode) || !apps::UsesParameterServers(p.run.parallel, p.run.device),
                "prune: unstructured pruning keeps its masks in one process or with --strategy ring, not with "
                "parameter servers");
}

int Prune(const PruneSettings& p) {
  CheckPruneSettings(p);
  DFLOW_REQUIRE(!fs::exists(ConfigPath(p.run.out)) || !apps::IsChiefProcess(), "prune: ", p.run.out,
                " already holds a run; choose another --out");
  const std::string checkpoint = fs::absolute(apps::ResolveCheckpoint(p.checkpoint)).string();
  CheckpointNetwork source = ReadNetwork(checkpoint);
  TrainSettings s = PrunedRunSettings(p, source, checkpoint);
  CheckModel(s, "prune");
  return Train(std::move(s), false, nullptr);
}

}  // namespace dflow::detect_app

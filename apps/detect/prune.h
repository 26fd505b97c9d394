// dflow-detect prune: a trained detector made smaller, then fine-tuned, as
// the model compression box of Murabito 2022 ("Deep Learning at the Edge",
// section 3.2) prunes with PyTorch: L1 unstructured per layer
// (l1-unstructured) or over the whole network (l1-global), the pruned
// weights kept at zero through fine-tuning by masks; or by channels, which
// here rebuilds the network with fewer channels in every prunable layer and
// in the layers that read them (models/compress/pruning.h), so that it is
// actually smaller and faster. The pruned model is a new run: eval, predict,
// export, quantize and bench take it as any other.
#pragma once

#include <string>

#include "apps/detect/detector.h"
#include "models/checkpoint.h"

namespace dflow::detect_app {

struct PruneSettings {
  std::string checkpoint;  // the run (or one of its checkpoints) to prune
  std::string mode = "channels";
  double sparsity = 0.5;
  // The new run's settings as given: out, steps or epochs (0 steps: pruned
  // without fine-tuning), data (default: the pruned run's), learning rate
  // (default: the model's for channels, a tenth of it for weights), seed
  // and resources; the network and
  // the rest of the recipe are the pruned run's.
  TrainSettings run;
};
// Refuses a mode or sparsity prune does not know, and unstructured pruning
// with parameter servers (the masks are applied where the variables are
// trained: one process, or every ring worker).
void CheckPruneSettings(const PruneSettings& settings);
int Prune(const PruneSettings& settings);

// The first step of a pruned run: the network's variables from the pruned
// checkpoint (settings.pruned_from), pruned as the settings say (channels
// removed, or weights zeroed and their masks set). `saver` covers every
// variable of the graph.
void InitFromPruned(Session& session, const DetectorGraph& graph, const Saver& saver, const TrainSettings& settings);

}  // namespace dflow::detect_app

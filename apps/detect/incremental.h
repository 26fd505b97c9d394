// Incremental learning in dflow-detect (Shmelkov et al. 2017, with iCaRL's
// exemplar memory, Rebuffi et al. 2017):
//   - new data for known classes, in sessions: `train --session` continues a
//     run on the session's data plus the run's exemplar memory, then keeps a
//     few of the session's images per class in RUN/memory and nothing else;
//   - a new class: `add-class` starts a run from an old one, the old model a
//     frozen teacher in the graph and the new one a copy with a wider class
//     head, trained on the new class's data, the old run's exemplars and the
//     distillation terms (models/detection/incremental.h).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/common/train_options.h"

#include "apps/detect/training.h"
#include "models/checkpoint.h"
#include "models/data/exemplars.h"

namespace dflow::detect_app {

// RUN/memory: the exemplar memory, a COCO folder (annotations.json, images/).
std::string MemoryDir(const std::string& run_dir);

// Joins `exemplars` (add-class's), or else the run's exemplar memory when it
// has one, into the training set.
void AddExemplars(const TrainSettings& settings, const models::DatasetPart* exemplars, PreparedRun& run);

// The first step of an add-class run: every network variable of the new
// model from the old checkpoint (settings.teacher), the class output layers
// widened (old columns copied, new ones as initialised), and the teacher's
// copy when the graph holds one. kInvalidArgument names a variable the
// checkpoint lacks or cannot fill. `saver` covers every variable of the graph.
void InitFromOldModel(Session& session, const DetectorGraph& graph, const Saver& saver,
                      const TrainSettings& settings);

// settings.exemplars of each class's images of `part`: at random (seeded
// by the run's seed and `salt`) or by herding on the features of the
// detector in `checkpoint`. Returns their image ids.
std::vector<int64_t> ChooseExemplars(const TrainSettings& settings, const models::DatasetPart& part,
                                     uint64_t salt, const std::string& checkpoint);

// The end of a session run: exemplars of `part` (ChooseExemplars with the
// run's latest checkpoint) join RUN/memory, which is rewritten whole.
// Returns the memory's image count.
int64_t UpdateExemplarMemory(const TrainSettings& settings, const models::DatasetPart& part);

// `train --session` on a run that exists: its config.json as --resume reads
// it (apps/common/train_options.h: a fixed option given is refused, a
// recorded resource given overrides the record), with the new session's
// data and length (--steps or --epochs, required); the session's number and
// first step (the latest checkpoint's global step) recorded.
TrainSettings NextSessionSettings(const TrainSettings& given, apps::TrainOptionGroups options);

// The global step of the run's latest checkpoint (0 when it has none).
int64_t LatestStep(const TrainSettings& settings);

// The end of a session: exemplars of its data join RUN/memory, and
// RUN/sessions.json gains the session's line (once: a finished session
// resumed again changes nothing).
void FinishSession(const TrainSettings& settings, double seconds);

struct AddClassSettings {
  std::string from;  // the old run (or one of its checkpoints)
  std::string data;  // the new classes' data: only new classes annotated
  std::string out;   // the new run
  double exemplars = 0.05;  // share of each old class's images kept from the old run
  std::string distill = "output";
  std::string exemplar_choice = "random";
  double distill_class_weight = 1.0, distill_box_weight = 1.0;
  std::string freeze;
  int64_t steps = 0;
  double epochs = 0;
  double learning_rate = 0;  // 0: a tenth of the model's default (fine-tuning a trained model)
  // The data may hold old classes too (the forgetting report's joint
  // training); otherwise an old class in --data is an error.
  bool old_classes_in_data = false;
  int threads = 2;
  int decode_threads = 1, prefetch = 3;  // the input pipeline, as train's
  int64_t checkpoint_every = 200;
  int keep = 3;
  uint64_t seed = 1;
  std::string device;
  apps::DataParallelSettings parallel;
};
int AddClass(const AddClassSettings& settings);

}  // namespace dflow::detect_app

// Exemplar memory, the old model's weights in a new one, and add-class; see
// incremental.h.
#include "apps/detect/incremental.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "apps/common/workers.h"
#include "apps/detect/commands.h"
#include "graph/file.h"
#include "models/checkpoint.h"
#include "models/data/exemplars.h"
#include "models/data/seeded_random.h"
#include "models/data/text_numbers.h"
#include "models/detection/incremental.h"
#include "models/safetensors.h"

namespace dflow::detect_app {
namespace {

namespace fs = std::filesystem;

// Each image's feature vector (DetectorNetwork::image_features), in
// `part.data.images` order.
std::vector<std::vector<float>> ImageFeatures(TrainedDetector& detector, const models::DatasetPart& part) {
  models::DetectionPipeline pipeline(part.data, part.root, InferencePipelineOptions(detector.config.size, 16));
  std::map<int64_t, std::vector<float>> by_id;
  while (std::optional<models::DetectionBatch> batch = pipeline.Next()) {
    Tensor f = detector.session->Run({{detector.graph->net.images, batch->images}},
                                     {detector.graph->net.image_features})[0];
    const int64_t dims = f.dim(1);
    for (size_t i = 0; i < batch->image_ids.size(); ++i) {
      const float* row = f.data<float>() + static_cast<int64_t>(i) * dims;
      by_id[batch->image_ids[i]].assign(row, row + dims);
    }
  }
  std::vector<std::vector<float>> features;
  for (const models::DetectionImage& image : part.data.images) features.push_back(by_id.at(image.id));
  return features;
}

bool HasMemory(const std::string& run_dir) {
  return fs::exists(fs::path(MemoryDir(run_dir)) / "annotations.json");
}

// A class output layer's columns per anchor: SSD adds the background.
int64_t ClassColumns(const TrainSettings& s, int64_t classes) {
  return IsRetinaNet(s.model) ? classes : classes + 1;
}

// add-class's settings: the old run's network and training recipe, its
// classes followed by the new data's, and what the command was given.
TrainSettings NewClassSettings(const TrainSettings& old, const models::DetectionDataset& data,
                               const AddClassSettings& a, const std::string& old_checkpoint) {
  TrainSettings s = old;
  s.data = a.data;
  s.out = a.out;
  int64_t next_id = *std::max_element(old.category_ids.begin(), old.category_ids.end()) + 1;
  std::set<int64_t> used(old.category_ids.begin(), old.category_ids.end());
  for (const models::DetectionCategory& c : data.categories) {
    const bool known = std::find(old.class_names.begin(), old.class_names.end(), c.name) != old.class_names.end();
    DFLOW_REQUIRE(!known || a.old_classes_in_data, "add-class: the class \"", c.name, "\" of ", a.data,
                  " already exists in ", a.from,
                  "; add-class learns new classes from data annotated with them alone "
                  "(more data of known classes: train --session)");
    if (known) continue;
    s.class_names.push_back(c.name);
    // A new class keeps its dataset's id unless an old class has it.
    int64_t id = used.count(c.id) ? next_id++ : c.id;
    used.insert(id);
    next_id = std::max(next_id, id + 1);
    s.category_ids.push_back(id);
  }
  DFLOW_REQUIRE(s.class_names.size() > old.class_names.size(), "add-class: ", a.data,
                " has no categories: nothing to add");
  s.teacher = old_checkpoint;
  s.teacher_classes = static_cast<int64_t>(old.class_names.size());
  s.distill = a.distill;
  s.distill_class_weight = a.distill_class_weight;
  s.distill_box_weight = a.distill_box_weight;
  s.exemplars = a.exemplars;
  s.exemplar_choice = a.exemplar_choice;
  s.freeze = a.freeze;
  s.init_from.clear();
  s.init_map.clear();
  s.steps = a.steps;
  s.epochs = a.epochs;
  s.learning_rate = a.learning_rate > 0 ? a.learning_rate : DefaultLearningRate(old.model) / 10;
  s.warmup_steps = -1;
  StartNewRun(s, a);
  return s;
}

// The old classes' exemplars for an add-class run: the old run's memory
// when it keeps one, else a share of each class's images of its dataset
// (seeded: every worker of a data-parallel run chooses the same). The
// chief also stores them as the new run's memory.
std::optional<models::DatasetPart> OldExemplars(const TrainSettings& s, const TrainSettings& old,
                                                const std::string& old_run) {
  if (s.exemplars == 0) return std::nullopt;
  models::DatasetPart part;
  if (HasMemory(old_run)) {
    part.root = MemoryDir(old_run);
    part.data = LoadDataset(part.root);
  } else {
    DFLOW_REQUIRE(fs::is_directory(old.data), "add-class: the old run's data ", old.data,
                  " (", ConfigPath(old_run), ") is not a folder here, and the run keeps no exemplar memory; ",
                  "give --exemplars 0 to add the class without exemplars");
    part.root = old.data;
    part.data = LoadDataset(old.data);
    part.data = models::SelectImages(part.data, ChooseExemplars(s, part, 0, s.teacher));
  }
  models::DatasetPart memory{models::JoinDatasets({part}, old.class_names, old.category_ids), ""};
  if (!apps::IsChiefProcess()) return memory;
  models::WriteDatasetFolder(MemoryDir(s.out), memory.data);
  std::cout << "exemplar memory: " << memory.data.images.size() << " images with "
            << memory.data.annotations.size() << " objects of the old classes, from " << part.root << "\n";
  return memory;
}

}  // namespace

std::string MemoryDir(const std::string& run_dir) { return (fs::path(run_dir) / "memory").string(); }

void AddExemplars(const TrainSettings& s, const models::DatasetPart* exemplars, PreparedRun& run) {
  models::DatasetPart memory;
  if (!exemplars) {
    if (!HasMemory(s.out)) return;
    memory = {LoadDataset(MemoryDir(s.out)), MemoryDir(s.out)};
    exemplars = &memory;
  }
  run.data = models::JoinDatasets({{std::move(run.data), run.root}, *exemplars}, s.class_names, s.category_ids);
  run.root.clear();
}

void InitFromOldModel(Session& session, const DetectorGraph& g, const Saver& saver, const TrainSettings& s) {
  std::unique_ptr<DetectorGraph> old_network = BuildInferenceGraph(TeacherSettings(s), {});
  const std::vector<std::string> names = VariableNames(old_network->scope.graph());
  SafetensorsReader reader(s.teacher);
  std::vector<TensorName> fetches(names.begin(), names.end());
  std::vector<Tensor> fresh = session.Run(fetches);  // the new model as initialised
  const bool has_teacher = g.loss.distill_class_loss.valid();
  const int64_t old_columns = ClassColumns(s, s.teacher_classes);
  const int64_t new_columns = ClassColumns(s, static_cast<int64_t>(s.class_names.size()));
  std::vector<NamedTensor> start;
  int widened = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const TensorEntry* entry = reader.Find(names[i]);
    if (!entry)
      Fail(Code::kInvalidArgument, s.teacher, " has no \"", names[i], "\": it is not a checkpoint of the ",
           s.model, " network of ", s.teacher_classes, " classes that ", ConfigPath(s.out), " names");
    Tensor old = reader.Read(*entry);
    if (has_teacher) start.push_back({std::string(kTeacherScope) + "/" + names[i], old});
    if (old.shape() != fresh[i].shape()) {
      old = models::detection::WidenClassOutputs(old, fresh[i], old_columns, new_columns);
      ++widened;
    }
    start.push_back({names[i], std::move(old)});
  }
  // Through a file and the Saver, so that the values reach the variables on
  // whichever device they live.
  const std::string path = (fs::path(s.out) / "start.safetensors").string();
  WriteSafetensors(path, start);
  RestoreOptions restore;
  for (const NamedTensor& t : start) restore.only.push_back(t.name);
  saver.Restore(session, path, restore);
  fs::remove(path);
  std::cout << "from " << s.teacher << ": " << names.size() - static_cast<size_t>(widened)
            << " variables copied, " << widened << " class layers widened from " << s.teacher_classes
            << " to " << s.class_names.size() << " classes"
            << (has_teacher ? "; the teacher holds the old model" : "") << "\n";
}

std::vector<int64_t> ChooseExemplars(const TrainSettings& s, const models::DatasetPart& part, uint64_t salt,
                                     const std::string& checkpoint) {
  if (s.exemplar_choice != "herding")
    return models::ChooseRandomExemplars(part.data, s.exemplars, models::SeededRandom::Combine({s.seed, salt}));
  std::unique_ptr<TrainedDetector> detector = LoadTrainedDetector(checkpoint, s.threads, s.device, {});
  return models::ChooseHerdingExemplars(part.data, ImageFeatures(*detector, part), s.exemplars);
}

int64_t UpdateExemplarMemory(const TrainSettings& s, const models::DatasetPart& part) {
  std::vector<models::DatasetPart> parts;
  if (HasMemory(s.out)) parts.push_back({LoadDataset(MemoryDir(s.out)), MemoryDir(s.out)});
  std::vector<int64_t> chosen =
      ChooseExemplars(s, part, static_cast<uint64_t>(s.session), *LatestCheckpoint(CheckpointDir(s)));
  parts.push_back({models::SelectImages(part.data, chosen), part.root});
  models::DetectionDataset memory = models::JoinDatasets(parts, s.class_names, s.category_ids);
  models::WriteDatasetFolder(MemoryDir(s.out), memory);
  return static_cast<int64_t>(memory.images.size());
}

TrainSettings NextSessionSettings(const TrainSettings& given, apps::TrainOptionGroups options) {
  std::erase_if(options.fixed, [](CLI::Option* o) { return o->get_name() == "--data"; });
  DFLOW_REQUIRE(!given.data.empty(), "train --session: give the session's --data");
  DFLOW_REQUIRE(given.steps > 0 || given.epochs > 0, "train --session: give the session's --steps or --epochs");
  TrainSettings s = apps::ResumeSettings(given, options, ReadConfig);
  if (!LatestCheckpoint(CheckpointDir(s)))
    Fail(Code::kNotFound, "train --session: no checkpoint in ", CheckpointDir(s), " to continue");
  s.data = given.data;
  s.steps = given.steps;
  s.epochs = given.epochs;
  s.session = std::max<int64_t>(s.session, 1) + 1;
  s.session_start = LatestStep(s);
  s.total_steps = s.batches_per_epoch = 0;  // planned over the session's data
  return s;
}

int64_t LatestStep(const TrainSettings& s) {
  std::optional<std::string> latest = LatestCheckpoint(CheckpointDir(s));
  if (!latest) return 0;
  SafetensorsReader reader(*latest);
  const TensorEntry* step = reader.Find("global_step");
  DFLOW_REQUIRE(step, *latest, " has no global_step: it is not a dflow-detect checkpoint");
  return reader.Read(*step).scalar<int64_t>();
}

void FinishSession(const TrainSettings& s, double seconds) {
  const fs::path log = fs::path(s.out) / "sessions.json";
  nlohmann::json sessions = fs::exists(log) ? apps::ReadJsonFile(log.string()) : nlohmann::json::array();
  DFLOW_REQUIRE(sessions.is_array(), log.string(), ": expected a JSON array of sessions");
  for (const nlohmann::json& line : sessions)
    if (line.value("session", int64_t{0}) == s.session) return;
  models::DatasetPart part{LoadDataset(s.data), s.data};
  const int64_t memory = UpdateExemplarMemory(s, part);
  sessions.push_back({{"session", s.session},
                      {"data", fs::absolute(s.data).string()},
                      {"images", part.data.images.size()},
                      {"first_step", s.session_start},
                      {"steps", s.total_steps - s.session_start},
                      {"seconds", seconds},
                      {"memory_images", memory}});
  WriteFileAtomic(log.string(), sessions.dump(1) + "\n");
  std::cout << "session " << s.session << " ended: " << MemoryDir(s.out) << " keeps " << memory
            << " images (" << models::FormatNumber(100 * s.exemplars) << "% of each class per session)\n";
}

int AddClass(const AddClassSettings& a) {
  const std::string old_checkpoint = fs::absolute(apps::ResolveCheckpoint(a.from)).string();
  const std::string old_run = apps::RunDirOf(old_checkpoint);
  if (old_run.empty())
    Fail(Code::kNotFound, "add-class: ", old_checkpoint, " is not inside a dflow-detect run directory ",
         "(RUN/checkpoints/ next to RUN/config.json)");
  // Other workers may find the chief's config.json already written.
  DFLOW_REQUIRE(!fs::exists(ConfigPath(a.out)) || !apps::IsChiefProcess(), "add-class: ", a.out,
                " already holds a run; choose another --out");
  DFLOW_REQUIRE(a.distill == "output" || a.distill == "none",
                "add-class: --distill takes output or none, got \"", a.distill, "\"");
  const TrainSettings old = ReadConfig(old_run);
  TrainSettings s = NewClassSettings(old, LoadDataset(a.data), a, old_checkpoint);
  CheckModel(s, "add-class");
  std::optional<models::DatasetPart> exemplars = OldExemplars(s, old, old_run);
  return Train(std::move(s), false, exemplars ? &*exemplars : nullptr);
}

}  // namespace dflow::detect_app

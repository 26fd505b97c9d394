// The forgetting report; see forgetting_report.h.
#include "apps/detect/forgetting_report.h"

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "apps/detect/commands.h"
#include "apps/detect/detector.h"
#include "apps/detect/incremental.h"
#include "graph/file.h"
#include "models/data/coco.h"
#include "models/data/exemplars.h"

namespace dflow::detect_app {
namespace {

namespace fs = std::filesystem;

struct Setting {
  const char* name;
  double exemplars;
  const char* distill;
  bool every_class;  // the new images with all their objects, not the new classes' alone
};

// The three new models; `old` is the fourth column.
std::vector<Setting> NewModelSettings(double exemplars) {
  return {{"joint", 1.0, "none", true}, {"fine-tune", 0.0, "none", false}, {"distill", exemplars, "output", false}};
}

// The images of `data` that hold an object of `select` (or, with
// `holding` false, none), with their objects of the classes `keep` only.
models::DetectionDataset Part(const models::DetectionDataset& data, const std::set<std::string>& select,
                              bool holding, const std::set<std::string>& keep) {
  std::set<int64_t> selected, kept_classes, images;
  for (const models::DetectionCategory& c : data.categories) {
    if (select.count(c.name)) selected.insert(c.id);
    if (keep.count(c.name)) kept_classes.insert(c.id);
  }
  for (const models::DetectionObject& o : data.annotations)
    if (selected.count(o.category_id)) images.insert(o.image_id);
  models::DetectionDataset part;
  for (const models::DetectionCategory& c : data.categories)
    if (kept_classes.count(c.id)) part.categories.push_back(c);
  std::set<int64_t> kept_images;
  for (const models::DetectionImage& image : data.images)
    if ((images.count(image.id) > 0) == holding) {
      part.images.push_back(image);
      kept_images.insert(image.id);
    }
  for (const models::DetectionObject& o : data.annotations)
    if (kept_images.count(o.image_id) && kept_classes.count(o.category_id)) part.annotations.push_back(o);
  return part;
}

// A split written as DIR/annotations.json over the source's images.
std::string WriteSplit(const fs::path& dir, const models::DetectionDataset& data) {
  fs::create_directories(dir);
  models::WriteCocoInstances((dir / "annotations.json").string(), data);
  return dir.string();
}

// The dataset with absolute file names and its own category ids.
models::DetectionDataset Absolute(const std::string& dir) {
  models::DetectionDataset data = LoadDataset(dir);
  std::vector<std::string> names;
  std::vector<int64_t> ids;
  for (const models::DetectionCategory& c : data.categories) names.push_back(c.name), ids.push_back(c.id);
  return models::JoinDatasets({{data, dir}}, names, ids);
}

std::string Cell(double ap) {
  if (ap < 0) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << 100 * ap;
  return s.str();
}

double Mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? -1 : sum / static_cast<double>(values.size());
}

}  // namespace

int ForgettingReport(const ForgettingReportSettings& r) {
  const fs::path out(r.out);
  DFLOW_REQUIRE(!fs::exists(out) || fs::is_empty(out), "forgetting-report: ", r.out,
                " is not empty; give a new folder");
  models::DetectionDataset train = Absolute(r.data), test = Absolute(r.test);
  std::set<std::string> added(r.new_classes.begin(), r.new_classes.end()), old_classes;
  for (const models::DetectionCategory& c : train.categories)
    if (!added.count(c.name)) old_classes.insert(c.name);
  for (const std::string& name : added)
    DFLOW_REQUIRE(std::any_of(train.categories.begin(), train.categories.end(),
                              [&](const models::DetectionCategory& c) { return c.name == name; }),
                  "forgetting-report: ", r.data, " has no class \"", name, "\"");
  DFLOW_REQUIRE(!old_classes.empty(), "forgetting-report: every class of ", r.data, " is new");
  const std::string old_data = WriteSplit(out / "data" / "old", Part(train, added, false, old_classes));
  const std::string new_data = WriteSplit(out / "data" / "new", Part(train, added, true, added));
  std::set<std::string> every_class = old_classes;
  every_class.insert(added.begin(), added.end());
  const std::string joint_data = WriteSplit(out / "data" / "new_all_objects", Part(train, added, true, every_class));
  // The old model is evaluated on the old classes' objects of every test image.
  const std::string old_test = WriteSplit(out / "data" / "test_old", Part(test, {}, false, old_classes));

  TrainSettings t;
  t.data = old_data;
  t.out = (out / "old").string();
  t.model = r.model, t.size = r.size, t.width = r.width, t.augment = r.augment, t.batch = r.batch;
  t.steps = r.old_steps, t.learning_rate = r.learning_rate, t.threads = r.threads, t.seed = r.seed;
  if (int code = Train(t, false)) return code;
  std::map<std::string, std::string> runs{{"old", t.out}};
  for (const Setting& setting : NewModelSettings(r.exemplars)) {
    AddClassSettings a;
    a.from = t.out, a.data = setting.every_class ? joint_data : new_data, a.out = (out / setting.name).string();
    a.exemplars = setting.exemplars, a.distill = setting.distill, a.old_classes_in_data = setting.every_class;
    a.steps = r.new_steps, a.learning_rate = r.new_learning_rate, a.threads = r.threads, a.seed = r.seed;
    if (int code = AddClass(a)) return code;
    runs[setting.name] = a.out;
  }

  // Per class and setting: VOC 2007 AP@0.5 on the held-out folder.
  std::map<std::string, std::map<std::string, double>> ap;  // setting -> class -> AP
  std::vector<std::string> classes;
  for (const auto& [name, dir] : runs) {
    std::unique_ptr<TrainedDetector> detector = LoadTrainedDetector(dir, r.threads, "", {});
    if (name == "distill") classes = detector->config.class_names;
    Evaluation e = Evaluate(*detector, name == "old" ? old_test : r.test, r.batch, r.threads);
    for (const models::VocClassAP& c : e.voc.classes) ap[name][c.name] = c.ap;
  }
  std::vector<std::string> columns{"old", "joint", "fine-tune", "distill"};
  nlohmann::json report{{"data", fs::absolute(r.data).string()}, {"test", fs::absolute(r.test).string()},
                        {"new_classes", r.new_classes}, {"runs", runs}, {"per_class", nlohmann::json::array()}};
  std::ostringstream table;
  table << std::left << std::setw(22) << "class";
  for (const std::string& c : columns) table << std::right << std::setw(11) << c;
  table << "\n";
  std::map<std::string, std::vector<double>> old_aps, new_aps;
  for (const std::string& name : classes) {
    const bool is_new = added.count(name) > 0;
    table << std::left << std::setw(22) << (name + (is_new ? " (new)" : ""));
    nlohmann::json row{{"class", name}, {"new", is_new}};
    for (const std::string& c : columns) {
      auto it = ap[c].find(name);
      double value = it == ap[c].end() ? -1 : it->second;
      table << std::right << std::setw(11) << Cell(value);
      row[c] = value;
      if (value >= 0) (is_new ? new_aps : old_aps)[c].push_back(value);
    }
    report["per_class"].push_back(row);
    table << "\n";
  }
  for (const auto& [label, key] : std::vector<std::pair<std::string, std::string>>{
           {"old classes mAP", "old_map"}, {"new classes mAP", "new_map"}, {"mAP", "map"}}) {
    table << std::left << std::setw(22) << label;
    for (const std::string& c : columns) {
      std::vector<double> values = key == "old_map" ? old_aps[c] : new_aps[c];
      if (key == "map") values.insert(values.end(), old_aps[c].begin(), old_aps[c].end());
      double m = Mean(values);
      table << std::right << std::setw(11) << Cell(m);
      report[key][c] = m;
    }
    table << "\n";
  }
  WriteFileAtomic((out / "report.json").string(), report.dump(1) + "\n");
  WriteFileAtomic((out / "report.txt").string(), table.str());
  std::cout << "\nAP@0.5 (VOC 2007, %) on " << r.test << ", " << test.images.size() << " images:\n"
            << table.str() << report.dump() << "\n";
  return 0;
}

}  // namespace dflow::detect_app

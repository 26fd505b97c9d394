// dflow-detect forgetting-report: how much adding a class makes a detector
// forget, compared the way incremental-detection studies do (Shmelkov et
// al. 2017, Table 1) on one dataset. A labelled training folder is split by class (the old classes' images with
// their objects; the new classes' images with only the new classes'
// objects), an old model is trained on the first part, and four detectors
// are compared on a held-out folder, per class:
//   old        the old model (old classes only);
//   joint      the old model fine-tuned on all the training data, every
//              class annotated (the upper bound);
//   fine-tune  the old model fine-tuned on the new data alone (forgetting);
//   distill    add-class: the new data, exemplars of the old classes and
//              distillation from the old model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/common/data_parallel_settings.h"

namespace dflow::detect_app {

struct ForgettingReportSettings {
  std::string data;   // labelled training folder with every class
  std::string test;   // labelled held-out folder
  std::string out;    // new or empty folder: the splits, the four runs, report.json
  std::vector<std::string> new_classes;  // the classes added (the others are old)
  std::string model = "ssd-mobilenet";
  int64_t size = 300;
  double width = 1.0;
  std::string augment = "ssd";
  int64_t batch = 8;
  int64_t old_steps = 0, new_steps = 0;  // the old model's training, and each new model's
  double learning_rate = 0;             // the old model's; 0: the model's default
  double new_learning_rate = 0;         // the new models'; 0: add-class's default
  double exemplars = 0.05;              // the distill run's share of each old class's images
  int threads = 2;
  uint64_t seed = 1;
};

int ForgettingReport(const ForgettingReportSettings& settings);

}  // namespace dflow::detect_app

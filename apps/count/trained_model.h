// A trained density counter restored from a checkpoint, for eval and predict.
#pragma once

#include <memory>
#include <string>

#include "apps/common/run_files.h"
#include "graph/scope.h"
#include "graph/session.h"
#include "models/density_counter.h"

namespace dflow::count_app {

using apps::RunDirOf;

struct TrainedModel {
  Scope scope = Scope::NewRootScope();
  models::DensityCounter model;
  std::unique_ptr<Session> session;
  std::string checkpoint;  // the file restored
};

// `checkpoint` is a .safetensors file, a checkpoint directory (its latest
// file) or a run directory (the latest file in RUN/checkpoints). Errors name
// the path: kNotFound when there is no checkpoint, and a checkpoint without
// the counter's variables (another model's) is kInvalidArgument saying so.
// `device`: where the network runs (empty: the CPU; "/device:GPU:0").
std::unique_ptr<TrainedModel> LoadTrainedModel(const std::string& checkpoint, int threads,
                                               const std::string& device);

}  // namespace dflow::count_app

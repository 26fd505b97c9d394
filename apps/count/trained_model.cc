// Restoring a trained counter; see trained_model.h.
#include "apps/count/trained_model.h"

#include "apps/count/run_config.h"
#include "models/checkpoint.h"

namespace dflow::count_app {

std::unique_ptr<TrainedModel> LoadTrainedModel(const std::string& checkpoint, int threads,
                                               const std::string& device) {
  auto trained = std::make_unique<TrainedModel>();
  trained->checkpoint = apps::ResolveCheckpoint(checkpoint);
  // Any tile size fits the weights (the network is fully convolutional);
  // 224 is what training uses by default.
  trained->model = models::BuildDensityCounter(trained->scope, {.tile_size = 224});
  SessionOptions options;
  options.num_threads = threads;
  if (!device.empty()) options.devices = {device};
  trained->session = std::make_unique<Session>(trained->scope, options);
  Saver saver(trained->scope);
  try {
    RestoreOptions restore;
    restore.only = trained->model.ModelVariableNames();
    saver.Restore(*trained->session, trained->checkpoint, restore);
  } catch (const Error& e) {
    if (e.code() == Code::kDataLoss) throw;
    Fail(Code::kInvalidArgument, trained->checkpoint,
         " is not a checkpoint of the dflow-count model: ", e.message());
  }
  return trained;
}

}  // namespace dflow::count_app

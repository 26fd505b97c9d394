// The `train` options the apps share: the resources a run uses (threads,
// device, input threads, prefetch, checkpoints, data-parallel workers), which
// are not fixed by the run and may change on `--resume`, and the check that
// the options which do fix a run (data, model, schedule, seed) are not given
// again. The settings types are the apps' own TrainSettings, which name these
// fields alike.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/common/run_files.h"
#include "apps/common/workers.h"
#include "graph/status.h"

namespace dflow::apps {

inline void AddDeviceOption(CLI::App& app, std::string& device) {
  app.add_option("--device", device,
                 "Device the network runs on: /device:CPU:0 (default) or /device:GPU:N");
}

template <typename TrainSettings>
void AddTrainingResourceOptions(CLI::App& app, TrainSettings& s) {
  app.add_option("--threads", s.threads, "Compute threads")->check(CLI::PositiveNumber);
  AddDeviceOption(app, s.device);
  app.add_option("--decode-threads", s.decode_threads, "Input threads (decode, augment, targets)")
      ->check(CLI::PositiveNumber);
  app.add_option("--prefetch", s.prefetch, "Batches prepared ahead")->check(CLI::PositiveNumber);
  app.add_option("--checkpoint-every", s.checkpoint_every, "Steps between checkpoints")
      ->check(CLI::PositiveNumber);
  app.add_option("--keep", s.keep, "Checkpoints kept")->check(CLI::PositiveNumber);
  AddDataParallelOptions(app, s.parallel);
}

// kInvalidArgument naming the first fixed option that was given.
inline void RefuseFixedOptions(const std::vector<CLI::Option*>& fixed, const std::string& run_dir) {
  for (CLI::Option* option : fixed)
    if (option->count() > 0)
      Fail(Code::kInvalidArgument, "train --resume: ", option->get_name(), " is fixed by ",
           ConfigPath(run_dir), "; leave it out");
}

// The settings to resume `given.out` with: its config.json (read by
// `read_config`), a longer run when --steps or --epochs is given, and the
// resources given now.
template <typename TrainSettings, typename ReadConfig>
TrainSettings ResumeSettings(const TrainSettings& given, const std::vector<CLI::Option*>& fixed,
                             ReadConfig read_config) {
  RefuseFixedOptions(fixed, given.out);
  TrainSettings s = read_config(given.out);
  s.out = given.out;
  if (given.steps > 0 || given.epochs > 0) s.steps = given.steps, s.epochs = given.epochs;
  s.threads = given.threads;
  s.device = given.device;
  s.decode_threads = given.decode_threads;
  s.prefetch = given.prefetch;
  s.checkpoint_every = given.checkpoint_every;
  s.keep = given.keep;
  s.parallel = given.parallel;
  return s;
}

}  // namespace dflow::apps

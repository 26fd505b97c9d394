// The `train` options the apps share: the resources a run uses (threads,
// device, input threads, prefetch, checkpoints, data-parallel workers), which
// are not fixed by the run and may change on `--resume` when given again
// (the run's config.json records some of them), and the check that
// the options which do fix a run (data, model, schedule, seed) are not given
// again. The settings types are the apps' own TrainSettings, which name these
// fields alike.
#pragma once

#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/common/cli_checks.h"
#include "apps/common/run_files.h"
#include "apps/common/workers.h"
#include "graph/status.h"

namespace dflow::apps {

inline void AddDeviceOption(CLI::App& app, std::string& device) {
  app.add_option("--device", device,
                 "Device the network runs on: /device:CPU:0 (default) or /device:GPU:N");
}

// The options of the resources a run records in its config.json; --resume
// uses the recorded value unless the option is given again.
struct RecordedResourceOptions {
  CLI::Option* threads = nullptr;
  CLI::Option* decode_threads = nullptr;
  CLI::Option* prefetch = nullptr;
  CLI::Option* checkpoint_every = nullptr;
  CLI::Option* keep = nullptr;
};

// What an app's `train` options are to --resume: those a run fixes (given
// again, they are refused) and the recorded resources (given again, they
// override the record).
struct TrainOptionGroups {
  std::vector<CLI::Option*> fixed;
  RecordedResourceOptions recorded;
};

template <typename TrainSettings>
RecordedResourceOptions AddTrainingResourceOptions(CLI::App& app, TrainSettings& s) {
  RecordedResourceOptions options;
  options.threads = app.add_option("--threads", s.threads, "Compute threads")->check(ThreadCount());
  AddDeviceOption(app, s.device);
  options.decode_threads =
      app.add_option("--decode-threads", s.decode_threads, "Input threads (decode, augment, targets)")
          ->check(ThreadCount());
  options.prefetch =
      app.add_option("--prefetch", s.prefetch, "Batches prepared ahead")->check(IntegerRange(1, 1024));
  options.checkpoint_every =
      app.add_option("--checkpoint-every", s.checkpoint_every, "Steps between checkpoints")->check(AtLeast(1));
  options.keep = app.add_option("--keep", s.keep, "Checkpoints kept")->check(IntegerRange(1, 100000));
  AddDataParallelOptions(app, s.parallel);
  return options;
}

// kInvalidArgument naming the first fixed option that was given.
inline void RefuseFixedOptions(const std::vector<CLI::Option*>& fixed, const std::string& run_dir) {
  for (CLI::Option* option : fixed)
    if (option->count() > 0)
      Fail(Code::kInvalidArgument, "train --resume: ", option->get_name(), " is fixed by ",
           ConfigPath(run_dir), "; leave it out");
}

// `recorded` becomes `given` when `option` was given on the command line,
// saying so when that changes it: a resumed run keeps its settings unless
// told otherwise, and a change is never silent.
template <typename T>
void OverrideRecorded(const CLI::Option* option, T& recorded, const T& given) {
  if (option == nullptr || option->count() == 0 || recorded == given) return;
  std::cout << "train --resume: " << option->get_name() << " " << given << " overrides the run's recorded "
            << recorded << "\n";
  recorded = given;
}

// The settings to resume `given.out` with: its config.json (read by
// `read_config`), a longer run when --steps or --epochs is given, the
// recorded resources unless given again, and the unrecorded ones (device,
// workers) given now.
template <typename TrainSettings, typename ReadConfig>
TrainSettings ResumeSettings(const TrainSettings& given, const TrainOptionGroups& options,
                             ReadConfig read_config) {
  RefuseFixedOptions(options.fixed, given.out);
  const RecordedResourceOptions& resources = options.recorded;
  TrainSettings s = read_config(given.out);
  s.out = given.out;
  if (given.steps > 0 || given.epochs > 0) s.steps = given.steps, s.epochs = given.epochs;
  OverrideRecorded(resources.threads, s.threads, given.threads);
  OverrideRecorded(resources.decode_threads, s.decode_threads, given.decode_threads);
  OverrideRecorded(resources.prefetch, s.prefetch, given.prefetch);
  OverrideRecorded(resources.checkpoint_every, s.checkpoint_every, given.checkpoint_every);
  OverrideRecorded(resources.keep, s.keep, given.keep);
  // A config.json edited by hand is checked like the command line.
  const std::string source = ConfigPath(given.out);
  CheckThreadCount(source + ": threads", s.threads);
  CheckThreadCount(source + ": decode_threads", s.decode_threads);
  DFLOW_REQUIRE(s.prefetch > 0 && s.checkpoint_every > 0 && s.keep > 0, source,
                ": prefetch, checkpoint_every and keep must be at least 1");
  s.device = given.device;
  s.parallel = given.parallel;
  return s;
}

}  // namespace dflow::apps

// `train --resume` in the apps: the run's own settings apply, so the options
// that fix a run (its data, model, schedule, seed) may not be given again.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/common/run_files.h"
#include "graph/status.h"

namespace dflow::apps {

// kInvalidArgument naming the first fixed option that was given.
inline void RefuseFixedOptions(const std::vector<CLI::Option*>& fixed, const std::string& run_dir) {
  for (CLI::Option* option : fixed)
    if (option->count() > 0)
      Fail(Code::kInvalidArgument, "train --resume: ", option->get_name(), " is fixed by ",
           ConfigPath(run_dir), "; leave it out");
}

}  // namespace dflow::apps

// What every dflow program does before it parses its command line: answers
// --version, shows each option's default in --help, and line-buffers stdout,
// so that its output reaches `dflow launch`, a job's log or a pipe as each
// line is written, not when a block fills.
#pragma once

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "dflow_config.h"

namespace dflow::apps {

// Call first in main, before any option or subcommand is added; then
// HideEmptyDefaults once they all are.
inline void SetUpProgram(CLI::App& app, const std::string& name) {
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  app.set_version_flag("--version", name + " " + DFLOW_VERSION);
  app.option_defaults()->always_capture_default();
}

// Call once every option is added: --help shows no default for flags (off
// unless given) nor for lists that start empty ("[]").
inline void HideEmptyDefaults(CLI::App& app) {
  for (CLI::Option* option : app.get_options())
    if (option->get_type_size() == 0 || option->get_default_str() == "[]") option->default_str("");
  for (CLI::App* sub : app.get_subcommands({})) HideEmptyDefaults(*sub);
}

}  // namespace dflow::apps

// What every dflow program does before it parses its command line: answers
// --version and --man-page (its man page, written from the same definitions
// as --help: apps/common/man_page.h), shows each option's default in --help,
// and line-buffers stdout,
// so that its output reaches `dflow launch`, a job's log or a pipe as each
// line is written, not when a block fills.
#pragma once

#include <cstdio>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/common/man_page.h"
#include "dflow_config.h"

namespace dflow::apps {

// Call first in main, before any option or subcommand is added; then
// HideEmptyDefaults once they all are.
inline void SetUpProgram(CLI::App& app, const std::string& name) {
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  app.set_version_flag("--version", name + " " + DFLOW_VERSION);
  app.option_defaults()->always_capture_default();
  // Printed when parsing reaches the flag, once every option is defined;
  // CLI::Success ends the parse with status 0. The empty group hides it.
  app.add_flag_callback("--man-page", [&app, name] {
       std::cout << ManPage(app, name, DFLOW_VERSION);
       throw CLI::Success();
     })
      ->trigger_on_parse()
      ->group("");
}

// Call once every option is added: --help shows no default for flags (off
// unless given), nor for lists that start empty ("[]"), nor for options whose
// help says their default in words ("(default: one per core)"): their stored
// value is a placeholder (0, -1) that means "work it out", not the default.
inline void HideEmptyDefaults(CLI::App& app) {
  for (CLI::Option* option : app.get_options())
    if (option->get_type_size() == 0 || option->get_default_str() == "[]" ||
        option->get_description().find("(default") != std::string::npos)
      option->default_str("");
  for (CLI::App* sub : app.get_subcommands({})) HideEmptyDefaults(*sub);
}

}  // namespace dflow::apps

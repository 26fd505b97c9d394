// A program's man page, written from its CLI11 definitions (the options,
// their types, defaults and help text, the subcommands), so that it never
// disagrees with --help. Every program answers --man-page with it (hidden
// from --help; SetUpProgram adds it), and the build installs the pages.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace dflow::apps {

// The page in roff (man(7) macros), section 1.
std::string ManPage(const CLI::App& app, const std::string& name, const std::string& version);

}  // namespace dflow::apps

// The subcommands of the `dflow` tool. Each adds itself to the CLI11 app; its
// callback does the work and reports bad input by throwing dflow::Error,
// which main() prints as "dflow: error: <message>" with exit status 1.
#pragma once

#include <CLI/CLI.hpp>

namespace dflow::cli {

void AddOpsCommand(CLI::App& app);  // dflow ops [--json] [OP...]
void AddRunCommand(CLI::App& app);  // dflow run GRAPH.json --feed ... --fetch ... --out DIR
void AddDotCommand(CLI::App& app);  // dflow dot GRAPH.json

}  // namespace dflow::cli

// The subcommands of the `dflow` tool. Each adds itself to the CLI11 app; its
// callback does the work and reports bad input by throwing dflow::Error,
// which main() prints as "dflow: error: <message>" with exit status 1.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "graph/run_metadata.h"
#include "graph/session.h"

namespace dflow::cli {

void AddOpsCommand(CLI::App& app);  // dflow ops [--json] [OP...]
void AddRunCommand(CLI::App& app);  // dflow run GRAPH.json --feed ... --fetch ... --out DIR
void AddDotCommand(CLI::App& app);  // dflow dot GRAPH.json
void AddProfileCommand(CLI::App& app);  // dflow profile GRAPH.json [--feed ...] --steps N
void AddFreezeCommand(CLI::App& app);  // dflow freeze GRAPH.json --output ... --init -o OUT.json
// dflow quantize FROZEN.json --output ... --calibration [INPUT=]PATH -o OUT.json
void AddQuantizeCommand(CLI::App& app);
// dflow place GRAPH.json --cluster FILE|--devices LIST [--json]; dflow partition ... --out DIR
void AddPlaceCommands(CLI::App& app);
// dflow launch -n N [--ps P] [--strategy ps|ring] -- PROGRAM ARGS
void AddLaunchCommand(CLI::App& app);
// dflow server --cluster FILE --job worker --task 1 [--bind ADDR]
void AddServerCommand(CLI::App& app);
// dflow plot RUN... -o curves.png: the runs' training curves (gnuplot)
void AddPlotCommand(CLI::App& app);
// dflow keygen --out DIR [--join CLUSTER_DIR]: CURVE keys (dist/transport/curve.h)
void AddKeygenCommand(CLI::App& app);
// dflow jobs serve|node: the job service and its node daemon (apps/jobs/, docs/jobs.md)
void AddJobsCommand(CLI::App& app);

// Reads "NAME=FILE.npy" feed specs; throws naming a malformed or repeated one.
FeedList ReadFeeds(const std::vector<std::string>& specs);
// A flag taking one value per use, repeatable (`--feed a=x.npy --feed
// b=y.npy`); a value never swallows the positional GRAPH that follows it.
void AddRepeatable(CLI::App* command, const char* name, std::vector<std::string>& values,
                   const char* help);

// "a,b,,c" -> {"a", "b", "c"} (for --devices lists).
std::vector<std::string> SplitCommas(const std::string& text);

// `dflow run --show-placement`: the device of every node the run's session
// placed over `devices` (its cluster's), and why (PlacementToText); `ran`,
// a traced step of that run, must agree (kInternal naming the node otherwise).
std::string RunPlacementText(const Graph& graph, const FeedList& feeds,
                             const std::vector<TensorName>& fetches,
                             const std::vector<TensorName>& targets,
                             const SessionOptions& options, const std::vector<std::string>& devices,
                             const RunMetadata& ran);

}  // namespace dflow::cli

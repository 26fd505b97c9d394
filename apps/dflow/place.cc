// `dflow place GRAPH.json (--cluster FILE | --devices LIST) [--profile TRACE]
// [--json]`: where every node goes and why (using a traced step's measured
// node times with --profile). `dflow partition ... --out DIR`: the
// per-device subgraphs with their _Send/_Recv pairs, as JSON and DOT
// (teaching material: docs/distributed.md walks through one).
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "apps/dflow/commands.h"
#include "dist/cluster.h"
#include "graph/partition.h"
#include "graph/placement.h"
#include "graph/profile.h"
#include "graph/file.h"
#include "graph/graph_io.h"

namespace dflow::cli {
namespace {

struct PlaceArgs {
  std::string graph;
  std::string cluster;
  std::string devices;
  bool soft = false;
  bool json = false;
  std::string out;
  std::string profile;
};

void AddDeviceOptions(CLI::App* command, PlaceArgs& args) {
  command->add_option("graph", args.graph, "Graph file (JSON).")->required();
  command->add_option("--cluster", args.cluster,
                      "Cluster spec file (JSON; see docs/distributed.md). Without it and "
                      "--devices, the DFLOW_CLUSTER environment variable is read.");
  command->add_option("--devices", args.devices,
                      "Comma-separated full device names, e.g. /device:CPU:0,/device:CPU:1.");
  command->add_flag("--soft-placement", args.soft,
                    "Fall back to another device when a requested one has no kernel.");
  command->add_option("--profile", args.profile,
                      "Chrome trace of a step (dflow run --trace, dflow profile --trace): the "
                      "cost model uses its measured node times instead of FLOP estimates.");
}

std::vector<std::string> Devices(const PlaceArgs& args) {
  if (!args.cluster.empty() && !args.devices.empty())
    Fail(Code::kInvalidArgument, "give --cluster or --devices, not both");
  if (!args.cluster.empty()) return dist::ClusterSpec::Load(args.cluster).DeviceNames();
  if (!args.devices.empty()) return SplitCommas(args.devices);
  if (auto spec = dist::ClusterSpec::FromEnvironment()) return spec->DeviceNames();
  Fail(Code::kInvalidArgument,
       "no devices: give --cluster FILE or --devices LIST (or set DFLOW_CLUSTER)");
}

Placement PlaceGraph(const Graph& graph, const PlaceArgs& args) {
  PlacementOptions options;
  options.allow_soft_placement = args.soft;
  if (!args.profile.empty()) options.cost.measured = LoadProfile(args.profile);
  return Place(graph, Devices(args), options);
}

void RunPlace(const PlaceArgs& args) {
  auto graph = LoadGraph(args.graph);
  Placement placement = PlaceGraph(*graph, args);
  if (args.json)
    std::cout << PlacementToJson(*graph, placement).dump(2) << "\n";
  else
    std::cout << PlacementToText(*graph, placement);
}

void RunPartition(const PlaceArgs& args) {
  auto graph = LoadGraph(args.graph);
  Placement placement = PlaceGraph(*graph, args);
  std::vector<DevicePartition> parts = Partition(*graph, placement);
  std::error_code ec;
  std::filesystem::create_directories(args.out, ec);
  if (ec || !std::filesystem::is_directory(args.out))
    Fail(Code::kInvalidArgument, "--out '", args.out, "': cannot create directory",
         ec ? ": " + ec.message() : std::string());
  std::filesystem::path dir(args.out);
  for (const DevicePartition& part : parts) {
    std::string base = DeviceFileName(part.device);
    SaveGraph(*part.graph, (dir / (base + ".json")).string());
    WriteFileAtomic((dir / (base + ".dot")).string(), ToDot(*part.graph));
    std::cout << part.device << ": " << part.graph->num_nodes() << " nodes -> " << base
              << ".json\n";
  }
  WriteFileAtomic((dir / "partitions.dot").string(), PartitionsToDot(parts));
  WriteFileAtomic((dir / "placement.json").string(),
                  PlacementToJson(*graph, placement).dump(2) + "\n");
}

}  // namespace

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) parts.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return parts;
}

void AddPlaceCommands(CLI::App& app) {
  auto place_args = std::make_shared<PlaceArgs>();
  CLI::App* place = app.add_subcommand("place", "Show where every node of a graph goes, and why.");
  AddDeviceOptions(place, *place_args);
  place->add_flag("--json", place_args->json, "Print the placement as JSON.");
  place->callback([place_args] { RunPlace(*place_args); });

  auto part_args = std::make_shared<PlaceArgs>();
  CLI::App* partition = app.add_subcommand(
      "partition", "Place a graph and cut it into one subgraph per device (JSON + DOT in --out).");
  AddDeviceOptions(partition, *part_args);
  partition
      ->add_option("--out", part_args->out,
                   "Directory for DEVICE.json, DEVICE.dot, "
                   "partitions.dot and placement.json.")
      ->required();
  partition->callback([part_args] { RunPartition(*part_args); });
}

}  // namespace dflow::cli

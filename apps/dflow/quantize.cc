// `dflow quantize FROZEN.json --output NAME... (--calibration [INPUT=]PATH... | --dynamic) -o OUT.json
// [--calibrator minmax|percentile|entropy] [--percentile P] [--per-tensor] [--skip LAYER...] [--report FILE.json]`:
// post-training int8 quantization, static or dynamic (models/compress/quantize_graph.h).
// Each PATH is a .npy file or a folder of them, one calibration batch per
// file; with several inputs, their folders' files pair up in name order.
// Prints a per-layer table (ranges, whether the layer takes the codes of
// the int8 layer before it, its output's error against the float graph on
// the first calibration batch) so that a layer that loses too much can be
// kept float with --skip. --dynamic needs no calibration (given, it still
// measures the error).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "apps/dflow/commands.h"
#include "graph/graph_io.h"
#include "graph/npy.h"
#include "models/compress/quantize_graph.h"

namespace dflow::cli {
namespace {

namespace fs = std::filesystem;

struct QuantizeArgs {
  std::string graph, out, report;
  std::vector<std::string> outputs, calibration, skip;
  std::string calibrator = "minmax";
  double percentile = 99.99;
  bool per_tensor = false;
  bool dynamic = false;
};

// The .npy files a PATH names: itself, or a folder's, sorted by name.
std::vector<std::string> NpyFiles(const std::string& path) {
  if (!fs::is_directory(path)) return {path};
  std::vector<std::string> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(path))
    if (entry.path().extension() == ".npy") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) Fail(Code::kInvalidArgument, "calibration folder ", path, " has no .npy file");
  return files;
}

// The graph's one Placeholder, for a --calibration without INPUT=.
std::string OnlyInput(const Graph& graph) {
  std::vector<std::string> inputs;
  for (Node* node : graph.nodes())
    if (node->op() == "Placeholder") inputs.push_back(node->name());
  if (inputs.size() != 1)
    Fail(Code::kInvalidArgument, "the graph has ", inputs.size(), " inputs (Placeholders); name each: ",
         "--calibration INPUT=PATH");
  return inputs[0];
}

std::vector<FeedList> CalibrationBatches(const Graph& graph, const std::vector<std::string>& specs) {
  std::vector<std::pair<std::string, std::vector<std::string>>> inputs;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    inputs.push_back({eq == std::string::npos ? OnlyInput(graph) : spec.substr(0, eq),
                      NpyFiles(eq == std::string::npos ? spec : spec.substr(eq + 1))});
  }
  const size_t n = inputs[0].second.size();
  for (const auto& [name, files] : inputs)
    if (files.size() != n)
      Fail(Code::kInvalidArgument, "--calibration: input ", name, " has ", files.size(), " batches, ",
           inputs[0].first, " has ", n);
  std::vector<FeedList> batches(n);
  for (size_t b = 0; b < n; ++b)
    for (const auto& [name, files] : inputs) batches[b].emplace_back(name, ReadNpy(files[b]));
  return batches;
}

std::string Range(float min, float max) {
  std::ostringstream out;
  out << std::setprecision(4) << "[" << min << ", " << max << "]";
  return out.str();
}

void PrintLayers(const std::vector<models::QuantizedLayer>& layers) {
  std::cout << std::left << std::setw(40) << "layer" << std::setw(18) << "kind" << std::setw(22) << "input range"
            << std::setw(22) << "output range" << std::setw(10) << "codes in" << "rel. error\n";
  for (const models::QuantizedLayer& l : layers) {
    std::cout << std::setw(40) << l.name << std::setw(18) << l.kind;
    if (!l.quantized) {
      std::cout << "float: " << l.reason << "\n";
      continue;
    }
    const bool dynamic = l.dynamic;
    std::cout << std::setw(22) << (dynamic ? "at run time" : Range(l.input_min, l.input_max)) << std::setw(22)
              << (dynamic ? "float" : Range(l.output_min, l.output_max)) << std::setw(10)
              << (l.input_from_int8 ? "int8" : "float") << std::setprecision(3);
    if (std::isnan(l.relative_error)) std::cout << "-";
    else std::cout << l.relative_error;
    std::cout << "\n";
  }
}

nlohmann::ordered_json ReportJson(const std::vector<models::QuantizedLayer>& layers) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const models::QuantizedLayer& l : layers)
    out.push_back({{"name", l.name}, {"kind", l.kind}, {"quantized", l.quantized}, {"reason", l.reason},
                   {"input_range", {l.input_min, l.input_max}}, {"output_range", {l.output_min, l.output_max}},
                   {"input_from_int8", l.input_from_int8}, {"dynamic", l.dynamic},
                   {"relative_error", std::isnan(l.relative_error) ? nlohmann::ordered_json()
                                                                  : nlohmann::ordered_json(l.relative_error)}});
  return out;
}

void Quantize(const QuantizeArgs& args) {
  std::shared_ptr<Graph> graph = LoadGraph(args.graph);
  models::QuantizeOptions options{.per_channel = !args.per_tensor,
                                  .skip = {args.skip.begin(), args.skip.end()}};
  options.calibrator = args.calibrator == "percentile" ? models::Calibrator::kPercentile
                       : args.calibrator == "entropy"  ? models::Calibrator::kEntropy
                                                       : models::Calibrator::kMinMax;
  options.percentile = args.percentile;
  options.dynamic = args.dynamic;
  const std::vector<FeedList> batches =
      args.calibration.empty() ? std::vector<FeedList>{} : CalibrationBatches(*graph, args.calibration);
  models::QuantizeResult result = models::QuantizeGraph(*graph, args.outputs, batches, options);
  SaveGraph(*result.graph, args.out);
  PrintLayers(result.layers);
  const auto quantized = std::count_if(result.layers.begin(), result.layers.end(),
                                       [](const models::QuantizedLayer& l) { return l.quantized; });
  std::cout << "quantized " << quantized << " of " << result.layers.size() << " convolutions; wrote " << args.out
            << " (" << fs::file_size(args.out) << " bytes; " << args.graph << ": " << fs::file_size(args.graph)
            << " bytes)\n";
  if (!args.report.empty()) {
    std::ofstream report(args.report);
    report << ReportJson(result.layers).dump(2) << "\n";
    if (!report) Fail(Code::kInternal, "could not write the report ", args.report);
  }
}

}  // namespace

void AddQuantizeCommand(CLI::App& app) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App* command = app.add_subcommand(
      "quantize", "Post-training int8 quantization of a frozen graph: static (calibrated on sample inputs) or dynamic.");
  command->add_option("graph", args->graph, "Frozen graph file (JSON; dflow freeze writes one).")->required();
  AddRepeatable(command, "--output", args->outputs, "A tensor or node the graph is run for (repeatable).");
  AddRepeatable(command, "--calibration", args->calibration,
                "[INPUT=]PATH: a .npy file or a folder of them, one batch each (repeatable: one per input).");
  command->add_option("-o,--out", args->out, "The int8 graph file to write (JSON).")->required();
  command->add_option("--calibrator", args->calibrator, "How activation ranges are taken from the batches.")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy"}))
      ->capture_default_str();
  command->add_option("--percentile", args->percentile, "percentile: the share of values each range keeps.")
      ->check(CLI::Range(50.0, 100.0))
      ->capture_default_str();
  command->add_flag("--dynamic", args->dynamic,
                    "Dynamic quantization: each layer's input range found at run time, no calibration needed "
                    "(given, --calibration measures the error).");
  command->add_flag("--per-tensor", args->per_tensor, "One weight range per filter, not per output channel.");
  AddRepeatable(command, "--skip", args->skip, "A layer (as the table names it) to keep in float (repeatable).");
  command->add_option("--report", args->report, "Also write the per-layer table as JSON here.");
  command->callback([args] {
    if (args->outputs.empty()) Fail(Code::kInvalidArgument, "quantize needs at least one --output");
    if (args->calibration.empty() && !args->dynamic)
      Fail(Code::kInvalidArgument, "quantize needs calibration inputs (--calibration [INPUT=]PATH) or --dynamic");
    Quantize(*args);
  });
}

}  // namespace dflow::cli

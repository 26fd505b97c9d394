// dflow-detect export: a trained detector as one frozen graph file (the
// inference network with its weights as constants, box decoding and NMS
// included; float, or quantized to int8), which `dflow run`, `dflow
// quantize` and `dflow-detect predict|eval|bench --graph` take. The run's
// config (network, classes, input size), the input and output names and the
// post-processing's score threshold travel in the file's metadata, so the
// file alone is a detector.
#include <filesystem>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/detect/commands.h"
#include "apps/detect/detector.h"
#include "graph/freeze.h"
#include "graph/graph_io.h"
#include "graph/json.h"

namespace dflow::detect_app {
namespace {

// The tensor's node: "name:1" -> "name".
std::string NodeOf(const std::string& tensor) { return tensor.substr(0, tensor.rfind(':')); }

bool HasInt8Layers(const Graph& graph) {
  for (const Node* node : graph.nodes())
    if (node->op().rfind("Quantized", 0) == 0) return true;
  return false;
}

}  // namespace

void SetDetectorMetadata(Graph& graph, const TrainedDetector& detector) {
  const nlohmann::json metadata{{"config", ToJson(detector.config)},
                                {"input", detector.input},
                                {"outputs", detector.outputs},
                                {"score_threshold", ShortestDecimal(detector.inference.score_threshold)},
                                {"max_detections", detector.inference.max_detections}};
  graph.set_metadata(kGraphMetadataKey, metadata.dump());
}

std::unique_ptr<TrainedDetector> LoadDetectorGraph(const std::string& path, int threads, const std::string& device) {
  std::shared_ptr<Graph> graph = LoadGraph(path);
  const auto found = graph->metadata().find(kGraphMetadataKey);
  if (found == graph->metadata().end())
    Fail(Code::kInvalidArgument, path, " is a graph without a detector's metadata (\"", kGraphMetadataKey,
         "\": its classes, input size and outputs); write detector graphs with dflow-detect export");
  auto detector = std::make_unique<TrainedDetector>();
  const std::string source = path + " metadata \"" + kGraphMetadataKey + "\"";
  try {
    const nlohmann::json metadata = nlohmann::json::parse(found->second);
    detector->config = TrainSettingsFromJson(metadata.at("config"), source);
    detector->input = metadata.at("input").get<std::string>();
    detector->outputs = metadata.at("outputs").get<std::vector<std::string>>();
    detector->inference.score_threshold = metadata.value("score_threshold", 0.0f);
    detector->inference.max_detections = metadata.value("max_detections", detector->inference.max_detections);
  } catch (const nlohmann::json::exception& e) {
    Fail(Code::kInvalidArgument, source, " is malformed: ", e.what());
  }
  DFLOW_REQUIRE(detector->outputs.size() == 4, source, ": expected 4 outputs (boxes, scores, classes, valid), got ",
                detector->outputs.size());
  for (const std::string& tensor : detector->outputs)
    DFLOW_REQUIRE(graph->FindNode(NodeOf(tensor)), source, " names the output ", tensor, ", which the graph lacks");
  DFLOW_REQUIRE(graph->FindNode(NodeOf(detector->input)), source, " names the input ", detector->input,
                ", which the graph lacks");
  detector->checkpoint = path;
  detector->device = device;
  detector->int8 = HasInt8Layers(*graph);
  SessionOptions options;
  options.num_threads = threads;
  if (!device.empty()) options.devices = {device};
  detector->session = std::make_unique<Session>(graph, options);
  return detector;
}

std::unique_ptr<TrainedDetector> LoadDetector(const std::string& checkpoint, const std::string& graph, int threads,
                                              const std::string& device, const InferenceOptions& options) {
  DFLOW_REQUIRE(checkpoint.empty() != graph.empty(), "give the detector: a checkpoint or a graph file, one of them");
  return graph.empty() ? LoadTrainedDetector(checkpoint, threads, device, options)
                       : LoadDetectorGraph(graph, threads, device);
}

std::string ScoreThresholdNote(const TrainedDetector& detector, double wanted) {
  const float threshold = detector.inference.score_threshold;
  if (detector.graph || threshold <= static_cast<float>(wanted)) return "";
  std::ostringstream note;
  note << "note: " << detector.checkpoint << " reports only scores of at least " << threshold
       << " (exported with --score " << threshold << "), not down to " << wanted
       << ": lower ones are neither reported nor counted in mAP; export with a lower --score for them";
  return note.str();
}

int Export(const ExportSettings& settings) {
  std::unique_ptr<TrainedDetector> detector = LoadTrainedDetector(
      settings.checkpoint, settings.threads, "", {.score_threshold = static_cast<float>(settings.score)});
  if (settings.int8)
    QuantizeDetector(*detector, settings.calibration, settings.calibration_images, settings.threads);
  // The int8 session already runs a frozen graph; freezing it again copies it.
  std::shared_ptr<Graph> graph = FreezeGraph(*detector->session, detector->outputs);
  SetDetectorMetadata(*graph, *detector);
  SaveGraph(*graph, settings.out);
  const TrainSettings& run = detector->config;
  std::cout << "exported " << run.model << " (" << (detector->int8 ? "int8" : "fp32") << ", "
            << run.class_names.size() << " classes, " << run.size << "x" << run.size << " input) from "
            << detector->checkpoint << " to " << settings.out << " (" << std::filesystem::file_size(settings.out)
            << " bytes)\n";
  return 0;
}

}  // namespace dflow::detect_app

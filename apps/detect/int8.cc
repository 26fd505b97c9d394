// dflow-detect eval --int8: the trained detector's inference graph frozen
// and quantized to int8 (models/compress/quantize_graph.h, as `dflow
// quantize` does it), calibrated on images as the evaluation pipeline feeds
// them, then evaluated like the float one; the table of layers it prints
// says which convolutions lose most.
#include <iostream>

#include "apps/detect/commands.h"
#include "apps/detect/detector.h"
#include "graph/freeze.h"
#include "models/compress/quantize_graph.h"
#include "models/data/detection_pipeline.h"

namespace dflow::detect_app {

std::vector<models::QuantizedLayer> QuantizeDetector(TrainedDetector& detector, const std::string& data_dir,
                                                     int64_t images, int threads) {
  DFLOW_REQUIRE(images >= 1, "--calibration-images must be at least 1, got ", images);
  DFLOW_REQUIRE(!detector.int8, detector.checkpoint, " is already quantized to int8");
  std::shared_ptr<Graph> frozen = FreezeGraph(*detector.session, detector.outputs);

  models::DetectionDataset data = LoadDataset(data_dir);
  models::DetectionPipeline pipeline(data, data_dir, InferencePipelineOptions(detector.config.size, 1));
  std::vector<FeedList> calibration;
  while (static_cast<int64_t>(calibration.size()) < images) {
    std::optional<models::DetectionBatch> next = pipeline.Next();
    if (!next) break;
    calibration.push_back({{detector.input, next->images}});
  }
  DFLOW_REQUIRE(!calibration.empty(), "calibration data ", data_dir, " has no images");
  models::QuantizeResult q = models::QuantizeGraph(*frozen, detector.outputs, calibration);
  SessionOptions options{.num_threads = threads};
  if (!detector.device.empty()) options.devices = {detector.device};
  detector.session = std::make_unique<Session>(q.graph, options);
  detector.int8 = true;
  int quantized = 0;
  for (const models::QuantizedLayer& layer : q.layers) quantized += layer.quantized;
  std::cout << "int8: quantized " << quantized << " of " << q.layers.size() << " convolutions, calibrated on "
            << calibration.size() << " images of " << data_dir << "\n";
  return q.layers;
}

}  // namespace dflow::detect_app

// The subcommands of dflow-detect (apps/detect/main.cc parses the flags).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/detect/run_config.h"
#include "models/compress/quantize_graph.h"
#include "models/data/detection_dataset.h"
#include "models/data/detection_pipeline.h"
#include "models/data/exemplars.h"
#include "models/metrics/coco_eval.h"
#include "models/metrics/voc_eval.h"

namespace dflow::detect_app {

// A dataset directory: DIR/annotations.json (COCO instances, file names
// relative to DIR), a Pascal VOC folder (Annotations/) or a YOLO folder
// (labels/); models/data/detection_formats.h.
models::DetectionDataset LoadDataset(const std::string& dir);

struct CocoEvalSettings {
  std::string gt, dt;
  int threads = 0;
};
int CocoEval(const CocoEvalSettings& settings);

// `resume`: continue RUN from its config.json and latest checkpoint; only
// `steps`/`epochs` (a longer run) may be given with it. `exemplars`: an
// add-class run's old-class exemplars, joined to the data by every worker
// alike (null: RUN/memory when the run has one).
int Train(TrainSettings settings, bool resume, const models::DatasetPart* exemplars = nullptr);

struct EvalSettings {
  std::string data;
  std::string checkpoint;  // a .safetensors file, a run directory or a checkpoint directory
  std::string results;     // COCO results JSON to write; empty: none
  int64_t batch = 8;
  int threads = 2;
  std::string device;
  bool int8 = false;          // evaluate the detector quantized to int8
  std::string calibration;    // --int8: images to calibrate on
  int64_t calibration_images = 64;
};
int Eval(const EvalSettings& settings);

// A trained detector's detections on a labelled dataset and their metrics;
// `summary` is the JSON line `eval` prints (COCO stats, voc07_map, per_class).
struct Evaluation {
  std::vector<models::Detection> detections;
  models::CocoEvalResult coco;
  models::VocEvalResult voc;
  int64_t images = 0;
  nlohmann::json summary;
};
struct TrainedDetector;
// A detector's pass over a dataset: every image once, in order, resized to
// `size`, unaugmented, the last batch kept whole.
models::DetectionPipelineOptions InferencePipelineOptions(int64_t size, int64_t batch);
Evaluation Evaluate(TrainedDetector& detector, const std::string& data_dir, int64_t batch, int threads);
// Replaces the detector's session by one over its inference graph frozen and
// quantized to int8, calibrated on the first `images` images of `data_dir`
// (apps/detect/int8.cc); returns the quantized layers.
std::vector<models::QuantizedLayer> QuantizeDetector(TrainedDetector& detector, const std::string& data_dir,
                                                     int64_t images, int threads);

struct PredictSettings {
  std::string checkpoint;
  std::vector<std::string> inputs;  // image files or directories of images
  std::string out;                  // PNGs with the boxes drawn; empty: none
  std::string json;                 // COCO results (with an image list); empty: none
  std::string csv;                  // one row per detection; empty: none
  double score = 0.5;               // detections below are not reported
  int threads = 2;
  std::string device;
};
int Predict(const PredictSettings& settings);

struct ConvertSettings {
  std::string data;    // a COCO, VOC or YOLO folder (found from what it holds)
  std::string out;     // a new or empty folder
  std::string format;  // coco, voc or yolo
  // A VOC source only: the split to read, and VOC's 20 classes as the categories.
  std::string split;
  bool voc_classes = false;
};
// Reads all of `data` before writing anything to `out`; prints one summary line.
int Convert(const ConvertSettings& settings);

}  // namespace dflow::detect_app

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
  std::string graph;       // or a graph file from export or `dflow quantize`
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

// The dataset's categories in the run's label order, matched by name (ids
// may differ between datasets). A category the run never learned is an
// error naming it and `source`; classes the dataset lacks simply have no
// objects (they keep their label's place with a negative id).
models::DetectionDataset InRunOrder(models::DetectionDataset data, const TrainSettings& run,
                                    const std::string& source);

// An image (uint8 [H, W, 3]) resized to the network's S x S, as float32
// [1, S, S, 3] in [0, 1], as predict and bench feed it.
Tensor NetworkInput(const Tensor& image, int64_t size);

struct PredictSettings {
  std::string checkpoint, graph;    // the detector: one of them
  std::vector<std::string> inputs;  // image files or directories of images
  std::string out;                  // PNGs with the boxes drawn; empty: none
  std::string json;                 // COCO results (with an image list); empty: none
  std::string csv;                  // one row per detection; empty: none
  double score = 0.5;               // detections below are not reported
  int threads = 2;
  std::string device;
};
int Predict(const PredictSettings& settings);

struct ExportSettings {
  std::string checkpoint;
  std::string out;     // the graph file (JSON)
  double score = 0.01;  // detections below are dropped by the graph (low: mAP integrates over them)
  bool int8 = false;
  std::string calibration;  // --int8: a dataset directory whose images calibrate it
  int64_t calibration_images = 64;
  int threads = 2;
};
int Export(const ExportSettings& settings);

struct BenchSettings {
  std::string checkpoint, graph;  // the detector: one of them
  std::string images, video;      // the input: a folder (or file) of images, or a video file
  std::string gt;      // COCO instances: file names relative to --images, or frame numbers of --video
  int threads = 2;
  std::string device;
  std::string save;    // folder for the annotated images, or the annotated video
  std::string csv;     // one row appended per run (header written when the file is new)
  std::string json;    // the detections as COCO results
  double score = 0.5;  // boxes drawn by --save
  int64_t warmup = 1;  // runs of the first input before timing (graph set-up, weight packing)
  int64_t limit = 0;   // at most this many images or frames; 0: all
};
int Bench(const BenchSettings& settings);

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

// dflow-detect bench: the detector benchmark of the model compression box
// (Murabito 2022, "Deep Learning at the Edge", chapter 3.1). A detector (a checkpoint, or a graph file
// from `dflow-detect export` or `dflow quantize`) runs over a folder of
// images or a video, one image or frame at a time, each timed in three
// parts: pre-processing (reading and decoding, resizing to the network's
// input), inference (the network, box decoding and NMS: all in the graph)
// and post-processing (boxes to the source's pixels). With ground truth it
// adds COCO mAP@0.5:0.95 and mAP@0.5; it prints a table and a JSON line and
// appends one row to a CSV file that collects runs.
#include <array>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "apps/common/image_files.h"
#include "apps/detect/bench_report.h"
#include "apps/detect/commands.h"
#include "apps/detect/detector.h"
#include "apps/detect/draw.h"
#include "graph/file.h"
#include "models/data/coco.h"
#include "models/data/image.h"
#include "models/data/text_numbers.h"
#include "models/data/video.h"
#include "models/metrics/coco_eval.h"

namespace dflow::detect_app {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// "2026-11-27T17:20:00Z"
std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// What the images or frames are evaluated against, when ground truth is
// given: the dataset in the run's label order, and each input's image id.
struct Truth {
  std::optional<models::DetectionDataset> data;
  std::map<std::string, const models::DetectionImage*> by_file;  // file name or frame number
};

Truth ReadTruth(const BenchSettings& s, const TrainSettings& run) {
  Truth truth;
  if (s.gt.empty()) return truth;
  truth.data = InRunOrder(models::ReadCocoInstances(s.gt), run, s.gt);
  for (const models::DetectionImage& image : truth.data->images) {
    if (!s.video.empty()) {
      const std::string& n = image.file_name;
      DFLOW_REQUIRE(!n.empty() && n.find_first_not_of("0123456789") == std::string::npos, s.gt, ": image ",
                    image.id, " has file_name \"", n, "\"; for a video it must be a frame number (0, 1, ...)");
    }
    truth.by_file[image.file_name] = &image;
  }
  return truth;
}

// The network as a run describes it: "ssd-mobilenet width 0.5, channels
// pruned 50%, distilled" (so that rows of one CSV tell compressed models apart).
std::string ModelName(const TrainSettings& run) {
  std::string name = run.model;
  if (run.model == kSsdMobileNet) name += " width " + models::FormatNumber(run.width);
  if (!run.prune.empty()) name += ", " + run.prune + " pruned " + models::FormatNumber(100 * run.sparsity) + "%";
  if (!run.distill_from.empty()) name += ", distilled (" + run.distillation + ")";
  return name;
}

// One benchmark run: the detector, the timings and what it found.
class BenchRun {
 public:
  BenchRun(const BenchSettings& s, TrainedDetector& detector, Truth truth)
      : s_(s), detector_(detector), truth_(std::move(truth)) {
    if (truth_.data)
      for (const models::DetectionCategory& c : truth_.data->categories) category_ids_.push_back(c.id);
    else
      category_ids_ = detector.config.category_ids;
  }

  // The image id `name` (a file name relative to --images, or a frame
  // number) has in the ground truth; 0 when it has none. An image whose
  // size differs from the one its entry gives is refused.
  int64_t ImageId(const std::string& name, const Tensor& image, int64_t fallback) const {
    if (!truth_.data) return fallback;
    auto found = truth_.by_file.find(name);
    if (found == truth_.by_file.end()) return 0;
    const models::DetectionImage& entry = *found->second;
    DFLOW_REQUIRE(entry.height == image.shape().dim(0) && entry.width == image.shape().dim(1), s_.gt, ": image ",
                  entry.id, " (", name, ") is ", entry.width, "x", entry.height, " there but ", image.shape().dim(1),
                  "x", image.shape().dim(0), " in the input");
    return entry.id;
  }

  // Runs the detector on one decoded image; `read_ms` is what reading and
  // decoding it took. Returns the detections in the image's pixels.
  std::vector<models::Detection> Frame(const Tensor& image, double read_ms, int64_t image_id) {
    const int64_t size = detector_.config.size;
    const std::array<int64_t, 2> hw{image.shape().dim(0), image.shape().dim(1)};
    for (; warmup_done_ < s_.warmup; ++warmup_done_) Detect(detector_, NetworkInput(image, size), {1}, {hw}, category_ids_);
    const Clock::time_point start = Clock::now();
    Tensor input = NetworkInput(image, size);
    const Clock::time_point resized = Clock::now();
    std::vector<Tensor> raw = RunDetector(detector_, input);
    const Clock::time_point inferred = Clock::now();
    std::vector<models::Detection> found = ToDetections(raw, {image_id}, {hw}, category_ids_);
    const Clock::time_point done = Clock::now();
    pre_ms_ += read_ms + Ms(start, resized);
    inference_ms_ += Ms(resized, inferred);
    post_ms_ += Ms(inferred, done);
    ++frames_;
    if (image_id > 0) {
      all_.insert(all_.end(), found.begin(), found.end());
      evaluated_.insert(image_id);
    }
    return found;
  }

  void Draw(Tensor& image, std::vector<models::Detection> found) const {
    std::erase_if(found, [this](const models::Detection& d) { return d.score < s_.score; });
    DrawDetections(image, found, category_ids_, detector_.config.class_names);
  }

  int64_t frames() const { return frames_; }
  // The ground truth; null without --gt.
  const models::DetectionDataset* truth() const { return truth_.data ? &*truth_.data : nullptr; }

  // The report's fields in the compression box's order (Murabito 2022, Listing 3.1).
  nlohmann::ordered_json Report(const std::string& model_file) const {
    DFLOW_REQUIRE(frames_ > 0, "bench: ", s_.video.empty() ? s_.images : s_.video, " gave no images");
    const TrainSettings& run = detector_.config;
    const nlohmann::ordered_json machine = MachineInfo();
    const double n = static_cast<double>(frames_);
    nlohmann::ordered_json r;
    r["date"] = UtcNow();
    r["model_name"] = ModelName(run);
    r["precision"] = detector_.int8 ? "int8" : "fp32";
    r["node_name"] = machine["node_name"];
    r["device"] = s_.device.empty() ? "/device:CPU:0" : s_.device;
    r["cpu"] = machine["cpu"];
    r["memory_gb"] = machine["memory_gb"];
    r["threads"] = s_.threads;
    r["resolution"] = run.size;
    r["runtime"] = "dflow";
    r["data"] = s_.video.empty() ? s_.images : s_.video;
    r["frames"] = frames_;
    r["fps"] = n * 1000.0 / (pre_ms_ + inference_ms_ + post_ms_);
    r["average_preprocess_ms"] = pre_ms_ / n;
    r["average_inference_ms"] = inference_ms_ / n;
    r["average_postprocess_ms"] = post_ms_ / n;
    r["map_50"] = nullptr;
    r["map_50_95"] = nullptr;
    if (truth_.data) {
      // Evaluated on the images that ran (--limit, or a video shorter than its ground truth).
      models::DetectionDataset data = *truth_.data;
      std::erase_if(data.categories, [](const models::DetectionCategory& c) { return c.id < 0; });
      std::erase_if(data.images, [this](const models::DetectionImage& i) { return !evaluated_.count(i.id); });
      std::erase_if(data.annotations, [this](const models::DetectionObject& o) { return !evaluated_.count(o.image_id); });
      const models::CocoEvalResult coco = models::EvaluateCoco(data, all_, {.threads = s_.threads});
      r["map_50"] = coco.stats[1];
      r["map_50_95"] = coco.stats[0];
    }
    r["model_size_mb"] = static_cast<double>(fs::file_size(model_file)) / 1e6;
    r["model"] = model_file;
    return r;
  }

  const std::vector<models::Detection>& detections() const { return all_; }

 private:
  const BenchSettings& s_;
  TrainedDetector& detector_;
  Truth truth_;
  std::vector<int64_t> category_ids_;
  std::vector<models::Detection> all_;  // of images with an id (all without ground truth)
  std::set<int64_t> evaluated_;         // the ids of those images
  double pre_ms_ = 0, inference_ms_ = 0, post_ms_ = 0;
  int64_t frames_ = 0, warmup_done_ = 0;
};

bool Done(const BenchSettings& s, int64_t frames) { return s.limit > 0 && frames >= s.limit; }

void BenchImages(const BenchSettings& s, BenchRun& run, apps::StagedOutputDir& saved) {
  std::vector<std::string> files;
  std::vector<std::string> names;  // as the ground truth names them: relative to --images
  if (const models::DetectionDataset* truth = run.truth()) {
    for (const models::DetectionImage& image : truth->images) {
      files.push_back((fs::path(s.images) / image.file_name).string());
      names.push_back(image.file_name);
    }
  } else {
    files = apps::ListImages({s.images});
    names = files;
  }
  const std::vector<std::string> drawn = apps::UniqueOutputNames(files, "_boxes.png");
  for (size_t i = 0; i < files.size() && !Done(s, run.frames()); ++i) {
    const Clock::time_point start = Clock::now();
    Tensor image = models::ReadImage(files[i], 3);
    const double read_ms = Ms(start, Clock::now());
    const auto id = run.ImageId(names[i], image, static_cast<int64_t>(i) + 1);
    std::vector<models::Detection> found = run.Frame(image, read_ms, id);
    if (saved.enabled()) {
      run.Draw(image, std::move(found));
      models::WritePng(saved.StagingPath(drawn[i]), image);
    }
  }
}

void BenchVideo(const BenchSettings& s, BenchRun& run, apps::StagedOutputDir& saved) {
  models::VideoReader video(s.video);
  std::optional<models::VideoWriter> annotated;
  const fs::path source(s.video);
  const std::string annotated_name = source.stem().string() + "_boxes" + source.extension().string();
  if (saved.enabled()) {
    models::VideoWriterOptions options;
    options.fps = video.info().fps > 0 ? video.info().fps : 25;
    annotated.emplace(saved.StagingPath(annotated_name), video.info().height, video.info().width, options);
  }
  while (!Done(s, run.frames())) {
    const Clock::time_point start = Clock::now();
    std::optional<Tensor> frame = video.Next();
    if (!frame) break;
    const double read_ms = Ms(start, Clock::now());
    const int64_t index = video.frames_read() - 1;
    const auto id = run.ImageId(std::to_string(index), *frame, index + 1);
    std::vector<models::Detection> found = run.Frame(*frame, read_ms, id);
    if (annotated) {
      run.Draw(*frame, std::move(found));
      annotated->Write(*frame);
    }
  }
  if (annotated) annotated->Close();
}

}  // namespace

int Bench(const BenchSettings& s) {
  DFLOW_REQUIRE(s.images.empty() != s.video.empty(), "bench: give --images or --video");
  DFLOW_REQUIRE(s.video.empty() || models::IsVideoFile(s.video), "bench: --video ", s.video,
                " is not a video file (.mp4, .m4v, .mkv, .avi, .mov, .webm)");
  std::unique_ptr<TrainedDetector> detector = LoadDetector(s.checkpoint, s.graph, s.threads, s.device, {});
  if (const std::string note = ScoreThresholdNote(*detector); !note.empty() && !s.gt.empty())
    std::cerr << note << "\n";
  BenchRun run(s, *detector, ReadTruth(s, detector->config));
  apps::StagedOutputDir saved(s.save);  // nothing is saved unless the whole run succeeds
  if (s.video.empty())
    BenchImages(s, run, saved);
  else
    BenchVideo(s, run, saved);
  const nlohmann::ordered_json report = run.Report(detector->checkpoint);
  if (!s.json.empty()) WriteFileAtomic(s.json, models::CocoResultsJson(run.detections()));
  if (!s.csv.empty()) AppendBenchCsv(s.csv, report);
  saved.Commit();
  std::cout << BenchTable(report) << report.dump() << std::endl;
  return 0;
}

}  // namespace dflow::detect_app

// dflow-detect: object detection (SSD, Liu et al. 2016, on MobileNetV1 or
// SqueezeNet; RetinaNet) from datasets to trained detectors, metrics and boxed images.
// Subcommands: train, add-class, prune, forgetting-report, eval, predict, export, bench, cocoeval, convert,
// generate (see --help).
#include <iostream>

#include <CLI/CLI.hpp>

#include "apps/common/cli_checks.h"
#include "apps/common/program.h"
#include "apps/common/model_split.h"
#include "apps/common/train_options.h"
#include "apps/common/workers.h"
#include "apps/detect/commands.h"
#include "apps/detect/forgetting_report.h"
#include "apps/detect/generate.h"
#include "apps/detect/incremental.h"
#include "apps/detect/prune.h"
#include "apps/detect/training.h"
#include "models/checkpoint.h"
#include "dist/transport/zmq_transport.h"
#include "graph/status.h"

namespace {

using namespace dflow::detect_app;
using dflow::apps::AtLeast;
using dflow::apps::IntegerRange;
using dflow::apps::PositiveReal;
using dflow::apps::ThreadCount;

void AddCocoEval(CLI::App& app, CocoEvalSettings& s) {
  app.add_option("--gt", s.gt, "Ground truth: COCO instances JSON")->required();
  app.add_option("--dt", s.dt, "Detections: COCO results JSON")->required();
  app.add_option("--threads", s.threads, "Threads (default: one per core)")->check(ThreadCount(true));
}

void AddConvert(CLI::App& app, ConvertSettings& s) {
  app.add_option("--data", s.data,
                 "Dataset folder: annotations.json (COCO), Annotations/ (VOC) or labels/ (YOLO)")
      ->required();
  app.add_option("--out", s.out, "New or empty folder to write the converted dataset to")
      ->required();
  app.add_option("--format", s.format, "Format to write")
      ->required()
      ->check(CLI::IsMember({"coco", "voc", "yolo"}));
  app.add_option("--split", s.split,
                 "VOC source: read only the images listed in ImageSets/Main/SPLIT.txt");
  app.add_flag("--voc-classes", s.voc_classes,
               "VOC source: VOC's 20 classes as categories 1..20 in the benchmark's order "
               "(default: the names found, sorted)");
}

// The options that fix a run; --resume takes them from RUN/config.json.
dflow::apps::TrainOptionGroups AddTrain(CLI::App& app, TrainSettings& s) {
  app.add_option("--data", s.data, "Dataset directory: COCO (annotations.json), VOC or YOLO");
  app.add_option("--out", s.out, "Run directory: config.json and checkpoints/")->required();
  app.add_option("--steps", s.steps, "Training steps (default: none; give this or --epochs)")->check(AtLeast(1));
  app.add_option("--epochs", s.epochs, "Training epochs (default: none; used when --steps is not given)")
      ->check(PositiveReal());
  std::vector<CLI::Option*> fixed = {
      app.get_option("--data"),
      app.add_option("--model", s.model,
                     "Network: SSD on MobileNetV1 or SqueezeNet 1.1, or RetinaNet on ResNet-18/50")
          ->check(CLI::IsMember(
              {kSsdMobileNet, kSsdSqueezeNet, kRetinaNetResNet18, kRetinaNetResNet50})),
      app.add_option("--size", s.size, "Network input size (square), pixels")->check(IntegerRange(64, 2048)),
      app.add_option("--width", s.width, "MobileNet width multiplier (ssd-squeezenet refuses it)")
          ->check(CLI::Range(0.1, 2.0)),
      app.add_option("--min-scale", s.min_scale, "SSD's smallest default box, of the input size")
          ->check(CLI::Range(0.01, 1.0)),
      app.add_option("--max-scale", s.max_scale, "SSD's largest default box, of the input size")
          ->check(CLI::Range(0.01, 1.0)),
      app.add_option("--batch", s.batch, "Images per batch")->check(AtLeast(1)),
      app.add_option("--lr", s.learning_rate,
                     "Adam learning rate, warm-up then cosine to 5% (default: 1e-2 SSD, 1e-4 RetinaNet)")
          ->check(PositiveReal()),
      app.add_option("--warmup", s.warmup_steps, "Warm-up steps (default: 5% of the run, at most 300)")
          ->check(AtLeast(0)),
      app.add_option("--augment", s.augment,
                     "ssd: photometric, expand, IoU crop, flip; light: photometric and flip; none")
          ->check(CLI::IsMember({"ssd", "light", "none"})),
      app.add_option("--freeze", s.freeze, "Keep these variables as initialised: backbone")
          ->check(CLI::IsMember({"backbone"})),
      app.add_option("--init-from", s.init_from, "Checkpoint to take the backbone's weights from"),
      app.add_option("--map", s.init_map,
                     "With --init-from: JSON {variable here: tensor name in the checkpoint}"),
      app.add_option("--seed", s.seed, "Seed of initialisation, augmentation and data order"),
      app.add_option("--exemplars", s.exemplars,
                     "--session: share of each class's images a session keeps in the exemplar memory")
          ->check(CLI::Range(0.0, 1.0)),
      app.add_option("--exemplar-choice", s.exemplar_choice,
                     "How exemplars are chosen: random (seeded) or herding (iCaRL, on backbone features)")
          ->check(CLI::IsMember({"random", "herding"})),
      app.add_option("--teacher", s.distill_from,
                     "Knowledge distillation: a trained detector (run or checkpoint) of the same classes and "
                     "default boxes that teaches this one"),
      app.add_option("--distill", s.distillation,
                     "With --teacher: what the student learns, the teacher's output, its feature maps near the "
                     "objects (Wang et al. 2019), or both")
          ->check(CLI::IsMember({"output", "feature", "both"}))
          ->capture_default_str(),
      app.add_option("--imitation-weight", s.imitation_weight,
                     "Weight of the feature imitation term (default: 0.01 fine-grained, 1 pearson)")
          ->check(dflow::apps::NonNegativeReal()),
      app.add_option("--imitation-loss", s.imitation_loss,
                     "Feature imitation as Wang et al. 2019 (squared difference at the cells near objects) or "
                     "Cao et al. 2022 (PKD: every cell, each channel standardised, so 1 - Pearson correlation)")
          ->check(CLI::IsMember({"fine-grained", "pearson"}))
          ->capture_default_str(),
      app.add_option("--imitation-maps", s.imitation_maps,
                     "Imitate only the first N maps the heads read, the finest (default: all)")
          ->check(CLI::NonNegativeNumber),
      app.add_option("--imitation-schedule", s.imitation_schedule,
                     "The imitation weight held constant, or decaying to 0 at the last step along a cosine")
          ->check(CLI::IsMember({"constant", "cosine"}))
          ->capture_default_str(),
      app.add_option("--distill-class-weight", s.distill_class_weight, "Weight of the class output term")
          ->check(dflow::apps::NonNegativeReal()),
      app.add_option("--distill-box-weight", s.distill_box_weight, "Weight of the box output term")
          ->check(dflow::apps::NonNegativeReal()),
      app.add_option("--distill-temperature", s.distill_temperature,
                     "Temperature of the class output term's soft targets (Hinton et al. 2015)")
          ->check(dflow::apps::PositiveReal())
          ->capture_default_str(),
      app.add_option("--distill-anchors", s.distill_anchors,
                     "Where the class output term counts: the anchors the teacher sees objects at "
                     "(weighted by its confidence), or all anchors, background included")
          ->check(CLI::IsMember({"foreground", "all"}))
          ->capture_default_str(),
      app.add_option("--distill-box", s.distill_box,
                     "The box output term: the student's boxes mimic the teacher's (weighted by its "
                     "confidence), or the teacher's error to the ground truth bounds the student's "
                     "(Chen et al. 2017)")
          ->check(CLI::IsMember({"mimic", "bounded"}))
          ->capture_default_str(),
  };
  dflow::apps::TrainOptionGroups groups{fixed, dflow::apps::AddTrainingResourceOptions(app, s)};
  dflow::apps::AddModelSplitOption(app, s.parallel);
  return groups;
}

void AddAddClass(CLI::App& app, AddClassSettings& s) {
  app.add_option("--from", s.from, "The old run (or one of its checkpoints)")->required();
  app.add_option("--data", s.data, "The new classes' data, annotated with them alone")->required();
  app.add_option("--out", s.out, "The new run")->required();
  app.add_option("--steps", s.steps, "Training steps (default: none; give this or --epochs)")->check(AtLeast(1));
  app.add_option("--epochs", s.epochs, "Training epochs over the new data and the exemplars (default: none)")
      ->check(PositiveReal());
  app.add_option("--exemplars", s.exemplars,
                 "Share of each old class's images kept as exemplars (the old run's memory when it has one)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--exemplar-choice", s.exemplar_choice,
                 "How exemplars are chosen from the old run's data: random (seeded) or herding (iCaRL)")
      ->check(CLI::IsMember({"random", "herding"}));
  app.add_option("--distill", s.distill, "output: the old model teaches the old classes; none: fine-tuning")
      ->check(CLI::IsMember({"output", "none"}));
  app.add_option("--distill-class-weight", s.distill_class_weight, "Weight of the class distillation term")
      ->check(dflow::apps::NonNegativeReal());
  app.add_option("--distill-box-weight", s.distill_box_weight, "Weight of the box distillation term")
      ->check(dflow::apps::NonNegativeReal());
  app.add_option("--freeze", s.freeze, "Keep these variables as the old model has them: backbone")
      ->check(CLI::IsMember({"backbone"}));
  app.add_option("--lr", s.learning_rate, "Adam learning rate (default: a tenth of the model's)")
      ->check(PositiveReal());
  app.add_option("--seed", s.seed, "Seed of the new head, the exemplars, augmentation and data order");
  dflow::apps::AddTrainingResourceOptions(app, s);
  dflow::apps::AddModelSplitOption(app, s.parallel);
}

void AddPrune(CLI::App& app, PruneSettings& s) {
  app.add_option("--checkpoint", s.checkpoint, "The trained detector: a run, checkpoint directory or file")
      ->required();
  app.add_option("--mode", s.mode,
                 "l1-unstructured: the smallest weights of each layer, zeroed; l1-global: of the whole "
                 "network; channels: the least important channels of each layer, removed (for RetinaNet those inside "
                 "its ResNet's blocks and its subnets)")
      ->check(CLI::IsMember({"l1-unstructured", "l1-global", "channels"}))
      ->capture_default_str();
  app.add_option("--sparsity", s.sparsity, "Share of the weights or of each layer's channels pruned")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  app.add_option("--out", s.run.out, "The new run: the pruned detector, fine-tuned")->required();
  app.add_option("--data", s.run.data, "Fine-tuning data (default: the pruned run's)");
  CLI::Option* steps = app.add_option("--steps", s.run.steps, "Fine-tuning steps (0: pruned only)")->check(AtLeast(0));
  CLI::Option* epochs =
      app.add_option("--epochs", s.run.epochs, "Fine-tuning epochs (when --steps is not given)")->check(PositiveReal());
  app.add_option("--lr", s.run.learning_rate,
                 "Adam learning rate (default: the model's for channels, a tenth of it for weights)")
      ->check(PositiveReal());
  app.add_option("--seed", s.run.seed, "Seed of augmentation and data order");
  dflow::apps::AddTrainingResourceOptions(app, s.run);
  dflow::apps::AddModelSplitOption(app, s.run.parallel);
  app.callback([steps, epochs] {
    if (steps->count() + epochs->count() == 0)
      throw CLI::ValidationError("prune", "give the fine-tuning's --steps (0: none) or --epochs");
  });
}

// add-class and prune train as train does: with --workers this process
// launches the others first, and a model part's task serves its part.
// Returns the exit code when this process's work ends here.
std::optional<int> LaunchOrServe(const dflow::apps::DataParallelSettings& parallel, const std::string& device,
                                 int threads, int argc, char** argv) {
  dflow::apps::CheckModelSplit(parallel);
  if (dflow::apps::ShouldLaunchWorkers(parallel)) {
    dflow::apps::RequireCpuWhenDistributed(device);
    dflow::apps::LaunchWorkers(parallel, argc, argv);
  }
  if (dflow::apps::IsModelPartTask()) return dflow::apps::ServeModelPart(threads);
  return std::nullopt;
}

void AddForgettingReport(CLI::App& app, ForgettingReportSettings& s) {
  app.add_option("--data", s.data, "Labelled training folder with every class")->required();
  app.add_option("--test", s.test, "Labelled held-out folder")->required();
  app.add_option("--out", s.out, "New or empty folder for the splits, the four runs and report.json")
      ->required();
  app.add_option("--new-class", s.new_classes, "A class to add (the others are old); repeatable")
      ->required();
  app.add_option("--model", s.model, "Network")
      ->check(CLI::IsMember({kSsdMobileNet, kSsdSqueezeNet, kRetinaNetResNet18, kRetinaNetResNet50}));
  app.add_option("--size", s.size, "Network input size (square), pixels")->check(CLI::Range(64, 2048));
  app.add_option("--width", s.width, "MobileNet width multiplier")->check(CLI::Range(0.1, 2.0));
  app.add_option("--augment", s.augment, "ssd, light or none")->check(CLI::IsMember({"ssd", "light", "none"}));
  app.add_option("--batch", s.batch, "Images per batch")->check(AtLeast(1));
  app.add_option("--old-steps", s.old_steps, "Steps of the old model's training")
      ->required()
      ->check(AtLeast(1));
  app.add_option("--new-steps", s.new_steps, "Steps of each new model's training")
      ->required()
      ->check(AtLeast(1));
  app.add_option("--lr", s.learning_rate, "The old model's Adam learning rate (default: the model's)")
      ->check(PositiveReal());
  app.add_option("--new-lr", s.new_learning_rate, "The new models' rate (default: add-class's)")
      ->check(PositiveReal());
  app.add_option("--exemplars", s.exemplars, "The distillation run's share of each old class's images")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--threads", s.threads, "Compute threads")->check(ThreadCount());
  app.add_option("--seed", s.seed, "Seed of every run");
}

// --int8, --calibration DIR and --calibration-images N (eval, export); --int8
// needs --calibration.
void AddInt8Options(CLI::App& app, const std::string& help, bool& int8, std::string& calibration,
                    int64_t& calibration_images) {
  app.add_flag("--int8", int8, help);
  CLI::Option* calibration_dir =
      app.add_option("--calibration", calibration, "--int8: a dataset directory whose images calibrate it");
  app.add_option("--calibration-images", calibration_images, "--int8: how many of its images")
      ->check(AtLeast(1))
      ->capture_default_str();
  app.callback([&int8, calibration_dir] {
    if (int8 && calibration_dir->count() == 0)
      throw CLI::ValidationError("--int8", "needs --calibration DIR (images to calibrate on)");
  });
}

// --checkpoint CKPT or --graph FILE.json, exactly one: the detector that eval, predict and bench run.
void AddDetectorOptions(CLI::App& app, std::string& checkpoint, std::string& graph) {
  CLI::Option_group* detector = app.add_option_group("Detector", "The detector to run");
  detector->add_option("--checkpoint", checkpoint, "Checkpoint file, checkpoint directory or run");
  detector->add_option("--graph", graph, "Graph file from dflow-detect export (float or int8) or dflow quantize");
  detector->require_option(1);
}

void AddEval(CLI::App& app, EvalSettings& s) {
  app.add_option("--data", s.data, "Dataset directory: COCO (annotations.json), VOC or YOLO")->required();
  AddDetectorOptions(app, s.checkpoint, s.graph);
  app.add_option("--results", s.results, "Write the detections as a COCO results file");
  app.add_option("--batch", s.batch, "Images per batch")->check(AtLeast(1));
  app.add_option("--threads", s.threads, "Compute threads")->check(ThreadCount());
  dflow::apps::AddDeviceOption(app, s.device);
  AddInt8Options(app, "Evaluate the detector quantized to int8 (post-training, calibrated)", s.int8,
                 s.calibration, s.calibration_images);
}

void AddPredict(CLI::App& app, PredictSettings& s) {
  AddDetectorOptions(app, s.checkpoint, s.graph);
  app.add_option("inputs", s.inputs, "Image files or directories of images")->required();
  app.add_option("--out", s.out, "Directory for the images with their boxes drawn (PNG)");
  app.add_option("--json", s.json, "COCO results file of the detections");
  app.add_option("--csv", s.csv, "CSV file of the detections");
  app.add_option("--score", s.score, "Lowest score reported")->check(CLI::Range(0.0, 1.0));
  app.add_option("--threads", s.threads, "Compute threads")->check(ThreadCount());
  dflow::apps::AddDeviceOption(app, s.device);
}

void AddExport(CLI::App& app, ExportSettings& s) {
  app.add_option("--checkpoint", s.checkpoint, "Checkpoint file, checkpoint directory or run")->required();
  app.add_option("-o,--out", s.out, "The graph file to write (JSON)")->required();
  app.add_option("--score", s.score, "Lowest score the graph reports")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  AddInt8Options(app, "Quantize the network to int8 (post-training, calibrated)", s.int8, s.calibration,
                 s.calibration_images);
  app.add_option("--threads", s.threads, "Compute threads")->check(ThreadCount());
}

void AddBench(CLI::App& app, BenchSettings& s) {
  AddDetectorOptions(app, s.checkpoint, s.graph);
  CLI::Option* images = app.add_option("--images", s.images, "A folder of images (or one image file)");
  CLI::Option* video = app.add_option("--video", s.video, "A video file (.mp4, .mkv, .avi, .mov, .webm)");
  images->excludes(video);
  app.add_option("--gt", s.gt,
                 "Ground truth (COCO instances): file names relative to --images, or frame numbers of --video");
  app.add_option("--threads", s.threads, "Compute threads")->check(ThreadCount());
  dflow::apps::AddDeviceOption(app, s.device);
  app.add_option("--save", s.save, "Folder for the annotated images, or the annotated video");
  app.add_option("--score", s.score, "Lowest score drawn by --save")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--csv", s.csv, "Append the run's report as a row to this CSV file (header when new)");
  app.add_option("--json", s.json, "Write the detections as a COCO results file");
  app.add_option("--warmup", s.warmup, "Untimed runs of the first input (graph set-up)")
      ->check(AtLeast(0))
      ->capture_default_str();
  app.add_option("--limit", s.limit, "At most this many images or frames (default: all)")->check(AtLeast(1));
  app.callback([images, video] {
    if (images->count() + video->count() == 0)
      throw CLI::ValidationError("bench", "give the input: --images DIR or --video FILE");
  });
}

}  // namespace

int main(int argc, char** argv) {
  dflow::dist::KeepFreedMemoryForReceives();  // data-parallel training receives tensors
  CLI::App app(
      "dflow-detect: object detection (SSD on MobileNetV1 or SqueezeNet 1.1, RetinaNet on ResNet-18/50) "
      "from datasets to boxes");
  dflow::apps::SetUpProgram(app, "dflow-detect");
  app.require_subcommand(1);
  TrainSettings train;
  bool resume = false;
  CLI::App* train_app = app.add_subcommand("train", "Train a detector");
  dflow::apps::TrainOptionGroups train_options = AddTrain(*train_app, train);
  train_app->add_flag("--resume", resume, "Continue the run in --out from its last checkpoint");
  bool session = false;
  train_app
      ->add_flag("--session", session,
                 "On-line learning: a new session's --data for the run in --out (started when new), "
                 "trained with the run's exemplar memory, of which it then keeps a share")
      ->excludes("--resume");
  AddClassSettings add_class;
  CLI::App* add_class_app =
      app.add_subcommand("add-class", "Learn new classes without forgetting the old ones (incremental learning)");
  AddAddClass(*add_class_app, add_class);
  PruneSettings prune;
  AddPrune(*app.add_subcommand("prune", "Prune a trained detector (weights or channels), then fine-tune it"), prune);
  ForgettingReportSettings forgetting;
  AddForgettingReport(*app.add_subcommand("forgetting-report",
                                          "Old model, joint training, fine-tuning and distillation + "
                                          "exemplars compared per class"),
                      forgetting);
  EvalSettings eval;
  AddEval(*app.add_subcommand("eval", "Evaluate a detector (checkpoint or graph file) on a labelled dataset"), eval);
  PredictSettings predict;
  AddPredict(*app.add_subcommand("predict", "Detect objects in images"), predict);
  CocoEvalSettings cocoeval;
  AddCocoEval(*app.add_subcommand("cocoeval", "COCO box AP/AR of a results file against ground truth"),
              cocoeval);
  ConvertSettings convert;
  AddConvert(*app.add_subcommand("convert", "Convert a detection dataset between COCO, VOC and YOLO"),
             convert);
  ExportSettings export_settings;
  AddExport(*app.add_subcommand("export", "Write a trained detector as one frozen graph file (float or int8)"),
            export_settings);
  BenchSettings bench;
  AddBench(*app.add_subcommand("bench", "Time a detector over images or a video, with mAP, a table and a CSV row"),
           bench);
  GenerateSettings generate;
  AddGenerateCommand(app, generate);
  dflow::apps::HideEmptyDefaults(app);
  CLI11_PARSE(app, argc, argv);
  try {
    if (app.got_subcommand("train")) {
      dflow::apps::CheckStrategy(train.parallel);  // also with one worker, which does not use it
      dflow::apps::CheckModelSplit(train.parallel);
      if (dflow::apps::ShouldLaunchWorkers(train.parallel)) {
        dflow::apps::RequireCpuWhenDistributed(train.device);
        dflow::apps::LaunchWorkers(train.parallel, argc, argv);
      }
      if (dflow::apps::IsModelPartTask()) return dflow::apps::ServeModelPart(train.threads);
      if (resume) return Train(dflow::apps::ResumeSettings(train, train_options, ReadConfig), true);
      // A run with a checkpoint is continued; otherwise this is its first
      // session (every worker sees the same: no checkpoint exists before
      // all of them have started).
      if (session && dflow::LatestCheckpoint(CheckpointDir(train)))
        return Train(NextSessionSettings(train, train_options), true);
      if (session) train.session = 1;
      DFLOW_REQUIRE(!train.data.empty(), "train: --data is required");
      return Train(train, false);
    }
    if (app.got_subcommand("add-class")) {
      if (auto code = LaunchOrServe(add_class.parallel, add_class.device, add_class.threads, argc, argv)) return *code;
      return AddClass(add_class);
    }
    if (app.got_subcommand("prune")) {
      dflow::apps::CheckStrategy(prune.run.parallel);
      CheckPruneSettings(prune);
      if (auto code = LaunchOrServe(prune.run.parallel, prune.run.device, prune.run.threads, argc, argv)) return *code;
      return Prune(prune);
    }
    if (app.got_subcommand("forgetting-report")) return ForgettingReport(forgetting);
    if (app.got_subcommand("eval")) return Eval(eval);
    if (app.got_subcommand("predict")) return Predict(predict);
    if (app.got_subcommand("convert")) return Convert(convert);
    if (app.got_subcommand("generate")) return Generate(generate);
    if (app.got_subcommand("export")) return Export(export_settings);
    if (app.got_subcommand("bench")) return Bench(bench);
    return CocoEval(cocoeval);
  } catch (const std::exception& e) {  // dflow::Error and filesystem errors name their paths
    std::cerr << "dflow-detect: " << e.what() << "\n";
    return 1;
  }
}

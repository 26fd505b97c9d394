// Detection formats found, read and written as one; see detection_formats.h.
#include "models/data/detection_formats.h"

#include <filesystem>
#include <map>
#include <system_error>
#include <unistd.h>

#include "graph/status.h"
#include "models/data/coco.h"
#include "models/data/voc.h"
#include "models/data/yolo.h"

namespace dflow::models {
namespace {

namespace fs = std::filesystem;

constexpr char kCocoFile[] = "annotations.json";

// Where a format keeps its images, relative to the dataset folder.
const char* ImageFolder(DetectionFormat format) {
  return format == DetectionFormat::kVoc ? "JPEGImages" : "images";
}

// The dataset with every image renamed into the format's image folder.
DetectionDataset RenameImages(const DetectionDataset& dataset, DetectionFormat format) {
  if (format != DetectionFormat::kCoco) RequireUniqueStems(dataset, DetectionFormatName(format));
  DetectionDataset out = dataset;
  std::map<std::string, int64_t> names;  // new file name -> image id
  for (DetectionImage& image : out.images) {
    fs::path name = fs::path(ImageFolder(format)) / fs::path(image.file_name).filename();
    image.file_name = name.generic_string();
    auto [it, fresh] = names.emplace(image.file_name, image.id);
    DFLOW_REQUIRE(fresh, "images ", it->second, " and ", image.id, " would both be copied to '",
                  image.file_name, "'");
  }
  return out;
}

void CopyImage(const fs::path& from, const fs::path& to) {
  std::error_code error;
  fs::create_directories(to.parent_path(), error);
  if (!error) fs::copy_file(from, to, fs::copy_options::overwrite_existing, error);
  if (error)
    Fail(Code::kUnavailable, "cannot copy '", from.string(), "' to '", to.string(),
         "': ", error.message());
}

void WriteStaged(const fs::path& dir, const DetectionDataset& dataset,
                 const DetectionDataset& renamed, DetectionFormat format,
                 const std::string& source_dir) {
  fs::create_directories(dir);
  for (size_t i = 0; i < dataset.images.size(); ++i)
    CopyImage(fs::path(source_dir) / dataset.images[i].file_name,
              dir / renamed.images[i].file_name);
  switch (format) {
    case DetectionFormat::kCoco:
      WriteCocoInstances((dir / kCocoFile).string(), renamed);
      break;
    case DetectionFormat::kVoc:
      WriteVocAnnotations(dir.string(), renamed);
      break;
    case DetectionFormat::kYolo:
      WriteYoloLabels(dir.string(), renamed);
      break;
  }
}

}  // namespace

DetectionFormat ParseDetectionFormat(const std::string& name) {
  if (name == "coco") return DetectionFormat::kCoco;
  if (name == "voc") return DetectionFormat::kVoc;
  if (name == "yolo") return DetectionFormat::kYolo;
  Fail(Code::kInvalidArgument, "unknown detection format '", name, "': use coco, voc or yolo");
}

const char* DetectionFormatName(DetectionFormat format) {
  switch (format) {
    case DetectionFormat::kCoco:
      return "coco";
    case DetectionFormat::kVoc:
      return "voc";
    case DetectionFormat::kYolo:
      return "yolo";
  }
  return "?";
}

DetectionFormat DetectDetectionFormat(const std::string& dir) {
  fs::path root(dir);
  if (fs::is_regular_file(root / kCocoFile)) return DetectionFormat::kCoco;
  if (fs::is_directory(root / "Annotations")) return DetectionFormat::kVoc;
  if (fs::is_directory(root / "labels")) return DetectionFormat::kYolo;
  Fail(Code::kNotFound, "'", dir, "' is not a detection dataset: found none of ", kCocoFile,
       " (COCO), Annotations/ (Pascal VOC), labels/ (YOLO)");
}

DetectionDataset LoadDetectionDataset(const std::string& dir, const VocReadOptions& voc) {
  DetectionFormat format = DetectDetectionFormat(dir);
  if (format != DetectionFormat::kVoc && (!voc.split.empty() || !voc.classes.empty()))
    Fail(Code::kInvalidArgument, "a split or class list applies to Pascal VOC folders, but '",
         dir, "' is a ", DetectionFormatName(format), " dataset");
  switch (format) {
    case DetectionFormat::kCoco:
      return ReadCocoInstances((fs::path(dir) / kCocoFile).string());
    case DetectionFormat::kVoc:
      return ReadVocDataset(dir, voc);
    case DetectionFormat::kYolo:
      return ReadYoloDataset(dir);
  }
  Fail(Code::kInternal, "unknown detection format");
}

void WriteDetectionDataset(const std::string& dir, const DetectionDataset& dataset,
                           DetectionFormat format, const std::string& source_dir) {
  if (fs::exists(dir) && !(fs::is_directory(dir) && fs::is_empty(dir)))
    Fail(Code::kAlreadyExists, "'", dir, "' already exists and is not an empty folder");
  DetectionDataset renamed = RenameImages(dataset, format);
  for (const DetectionImage& image : dataset.images)
    if (!fs::is_regular_file(fs::path(source_dir) / image.file_name))
      Fail(Code::kNotFound, "image '", image.file_name, "' (id ", image.id, ") is not in '",
           source_dir, "'");
  // Everything goes to a sibling folder that is renamed to DIR at the end, so
  // a failure part-way (a full disk) leaves no half-written dataset behind.
  fs::path target = fs::absolute(dir).lexically_normal();
  if (!target.has_filename()) target = target.parent_path();
  fs::path staging = target;
  staging += StrCat(".partial.", ::getpid());
  try {
    WriteStaged(staging, dataset, renamed, format, source_dir);
    fs::rename(staging, target);  // replaces an empty DIR
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    throw;
  }
}

void RequireUniqueStems(const DetectionDataset& dataset, const std::string& writer) {
  std::map<std::string, const DetectionImage*> stems;
  for (const DetectionImage& image : dataset.images) {
    auto [it, fresh] = stems.emplace(fs::path(image.file_name).stem().string(), &image);
    DFLOW_REQUIRE(fresh, writer, ": images '", it->second->file_name, "' (id ", it->second->id,
                  ") and '", image.file_name, "' (id ", image.id,
                  ") would share one annotation file");
  }
}

}  // namespace dflow::models

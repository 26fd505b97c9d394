// YOLO txt label folders; see yolo.h.
#include "models/data/yolo.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "graph/file.h"
#include "graph/status.h"
#include "models/data/detection_formats.h"
#include "models/data/image.h"
#include "models/data/text_numbers.h"

namespace dflow::models {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Lines(const std::string& path) {
  std::istringstream in(ReadFileToString(path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<std::string> ReadClassNames(const fs::path& dir) {
  fs::path path = dir / "classes.txt";
  if (!fs::exists(path)) path = dir / "obj.names";
  if (!fs::exists(path))
    Fail(Code::kNotFound, "YOLO dataset '", dir.string(),
         "' has neither classes.txt nor obj.names");
  std::vector<std::string> names = Lines(path.string());
  while (!names.empty() && names.back().empty()) names.pop_back();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i].empty())
      Fail(Code::kInvalidArgument, "'", path.string(), "' line ", i + 1, ": empty class name");
  if (names.empty()) Fail(Code::kInvalidArgument, "'", path.string(), "' lists no classes");
  return names;
}

bool IsImageFile(const fs::directory_entry& entry) {
  static const std::set<std::string> kExtensions = {".jpg", ".jpeg", ".png", ".bmp", ".tga",
                                                    ".gif", ".pnm",  ".ppm", ".pgm"};
  std::string ext = entry.path().extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return entry.is_regular_file() && kExtensions.count(ext);
}

// The image files of DIR/images by stem, the name of their label files.
using ImagesByStem = std::map<std::string, fs::path>;

ImagesByStem ImageFiles(const fs::path& dir) {
  fs::path images = dir / "images";
  if (!fs::is_directory(images))
    Fail(Code::kNotFound, "YOLO dataset '", dir.string(), "' has no images/ folder");
  ImagesByStem files;
  for (const fs::directory_entry& e : fs::directory_iterator(images)) {
    if (!IsImageFile(e)) continue;
    if (auto [it, fresh] = files.emplace(e.path().stem().string(), e.path()); !fresh)
      Fail(Code::kInvalidArgument, "YOLO images '", it->second.string(), "' and '",
           e.path().string(), "' would share one label file");
  }
  return files;
}

double UnitValue(const std::string& field, const char* name, const std::string& where) {
  double value = ParseFiniteNumber(field, where);
  if (value < 0 || value > 1)
    Fail(Code::kInvalidArgument, where, ": ", name, " = ", field, " is outside [0, 1]");
  return value;
}

// One label line "class cx cy w h" as an object of `image` (ids left to the caller).
DetectionObject ParseLabel(const std::string& line, const std::string& where,
                           const DetectionImage& image, size_t classes) {
  std::istringstream in(line);
  std::vector<std::string> f;
  for (std::string field; in >> field;) f.push_back(field);
  if (f.size() != 5)
    Fail(Code::kInvalidArgument, where, ": expected 'class cx cy w h', got '", line, "'");
  int64_t label = ParseWholeNumber(f[0], where);
  if (label < 0 || label >= int64_t(classes))
    Fail(Code::kInvalidArgument, where, ": class ", label, " is out of range: there are ", classes,
         " classes");
  double cx = UnitValue(f[1], "cx", where), cy = UnitValue(f[2], "cy", where);
  double w = UnitValue(f[3], "w", where), h = UnitValue(f[4], "h", where);
  double W = double(image.width), H = double(image.height);
  BoxXYWH box{(cx - w / 2) * W, (cy - h / 2) * H, w * W, h * H};
  return {0, image.id, label + 1, box, box[2] * box[3], false, false};
}

void ReadLabels(const fs::path& path, const DetectionImage& image, size_t classes,
                DetectionDataset& out) {
  std::vector<std::string> lines = Lines(path.string());
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t") == std::string::npos) continue;
    std::string where = StrCat("'", path.string(), "' line ", i + 1);
    DetectionObject object = ParseLabel(lines[i], where, image, classes);
    object.id = int64_t(out.annotations.size()) + 1;
    out.annotations.push_back(object);
  }
}

// Every label file must belong to an image: an orphan is a wrong name, not "no objects".
void CheckLabelsHaveImages(const fs::path& labels, const ImagesByStem& images) {
  if (!fs::is_directory(labels)) return;
  for (const fs::directory_entry& e : fs::directory_iterator(labels))
    if (e.path().extension() == ".txt" && !images.count(e.path().stem().string()))
      Fail(Code::kInvalidArgument, "'", e.path().string(), "' has no image in images/");
}

}  // namespace

DetectionDataset ReadYoloDataset(const std::string& dir) {
  std::vector<std::string> names = ReadClassNames(dir);
  ImagesByStem images = ImageFiles(dir);
  fs::path labels = fs::path(dir) / "labels";
  CheckLabelsHaveImages(labels, images);
  DetectionDataset out;
  for (size_t c = 0; c < names.size(); ++c) out.categories.push_back({int64_t(c) + 1, names[c]});
  for (const auto& [stem, path] : images) {
    ImageInfo info = ReadImageInfo(path.string());
    int64_t id = int64_t(out.images.size()) + 1;
    DetectionImage image{id, StrCat("images/", path.filename().string()), info.width, info.height};
    fs::path label = labels / (stem + ".txt");
    if (fs::exists(label)) ReadLabels(label, image, names.size(), out);
    out.images.push_back(std::move(image));
  }
  return out;
}

void WriteYoloLabels(const std::string& dir, const DetectionDataset& dataset) {
  std::unordered_map<int64_t, size_t> class_index;
  std::string classes;
  for (const DetectionCategory& c : dataset.categories) {
    DFLOW_REQUIRE(c.name.find('\n') == std::string::npos && !c.name.empty(),
                  "WriteYoloLabels: category ", c.id, " needs a one-line, non-empty name");
    class_index.emplace(c.id, class_index.size());
    classes += c.name + "\n";
  }
  std::unordered_map<int64_t, const DetectionImage*> images;
  for (const DetectionImage& image : dataset.images) images[image.id] = &image;
  std::unordered_map<int64_t, std::string> lines;  // by image id
  for (const DetectionObject& a : dataset.annotations) {
    DFLOW_REQUIRE(class_index.count(a.category_id) && images.count(a.image_id),
                  "WriteYoloLabels: annotation ", a.id, " names an unknown image or category");
    const DetectionImage& image = *images[a.image_id];
    double W = double(image.width), H = double(image.height);
    const BoxXYWH& b = a.bbox;
    lines[a.image_id] +=
        StrCat(class_index[a.category_id], " ", FormatNumber((b[0] + b[2] / 2) / W), " ",
               FormatNumber((b[1] + b[3] / 2) / H), " ", FormatNumber(b[2] / W), " ",
               FormatNumber(b[3] / H), "\n");
  }
  RequireUniqueStems(dataset, "WriteYoloLabels");
  fs::path labels = fs::path(dir) / "labels";
  fs::create_directories(labels);
  for (const DetectionImage& image : dataset.images) {
    std::string stem = fs::path(image.file_name).stem().string();
    WriteFileAtomic((labels / (stem + ".txt")).string(), lines[image.id]);
  }
  WriteFileAtomic((fs::path(dir) / "classes.txt").string(), classes);
}

}  // namespace dflow::models

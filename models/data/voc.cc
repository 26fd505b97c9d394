// Pascal VOC annotation folders; see voc.h.
#include "models/data/voc.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <pugixml.hpp>
#include <set>
#include <sstream>
#include <unordered_map>

#include "graph/file.h"
#include "graph/status.h"
#include "models/data/detection_formats.h"
#include "models/data/text_numbers.h"

namespace dflow::models {

const std::vector<std::string> kVocClasses = {
    "aeroplane", "bicycle",     "bird",  "boat",        "bottle", "bus",      "car",
    "cat",       "chair",       "cow",   "diningtable", "dog",    "horse",    "motorbike",
    "person",    "pottedplant", "sheep", "sofa",        "train",  "tvmonitor"};

namespace {

namespace fs = std::filesystem;

struct VocObject {
  std::string name;
  BoxXYWH box{};
  bool difficult = false;
};

struct VocFile {
  std::string file_name;  // relative to the dataset folder
  int64_t width = 0, height = 0;
  std::vector<VocObject> objects;
};

// The text of parent's child element `name`, which must exist.
std::string ChildText(pugi::xml_node parent, const char* name, const std::string& where) {
  pugi::xml_node child = parent.child(name);
  if (!child) Fail(Code::kInvalidArgument, where, ": missing <", name, ">");
  return child.text().get();
}

double ChildNumber(pugi::xml_node parent, const char* name, const std::string& where) {
  return ParseFiniteNumber(ChildText(parent, name, where), StrCat(where, " <", name, ">"));
}

int64_t ImageSide(pugi::xml_node size, const char* name, const std::string& where) {
  int64_t side = ParseWholeNumber(ChildText(size, name, where), StrCat(where, " <", name, ">"));
  if (side <= 0) Fail(Code::kInvalidArgument, where, ": <", name, "> must be positive, got ", side);
  return side;
}

// The pixel box [xmin, xmax] x [ymin, ymax] (1-based, inclusive) as COCO xywh.
BoxXYWH ReadBox(pugi::xml_node object, const VocFile& file, const std::string& where) {
  pugi::xml_node box = object.child("bndbox");
  if (!box) Fail(Code::kInvalidArgument, where, ": missing <bndbox>");
  double xmin = ChildNumber(box, "xmin", where), ymin = ChildNumber(box, "ymin", where);
  double xmax = ChildNumber(box, "xmax", where), ymax = ChildNumber(box, "ymax", where);
  if (xmin > xmax || ymin > ymax)
    Fail(Code::kInvalidArgument, where, ": inverted box: xmin..xmax ", xmin, "..", xmax,
         ", ymin..ymax ", ymin, "..", ymax);
  if (xmin < 1 || ymin < 1 || xmax > file.width || ymax > file.height)
    Fail(Code::kInvalidArgument, where, ": box (", xmin, ", ", ymin, ")..(", xmax, ", ", ymax,
         ") is outside the ", file.width, "x", file.height,
         " image (VOC pixels run from 1 to the width and height)");
  return {xmin - 1, ymin - 1, xmax - xmin + 1, ymax - ymin + 1};
}

bool ReadDifficult(pugi::xml_node object, const std::string& where) {
  pugi::xml_node difficult = object.child("difficult");
  if (!difficult) return false;
  int64_t flag = ParseWholeNumber(difficult.text().get(), where + " <difficult>");
  if (flag != 0 && flag != 1)
    Fail(Code::kInvalidArgument, where, ": <difficult> must be 0 or 1, got ", flag);
  return flag == 1;
}

pugi::xml_node LoadAnnotation(pugi::xml_document& doc, const std::string& path) {
  // Read through ReadFileToString: a regular file of bounded size only.
  std::string text = ReadFileToString(path);
  pugi::xml_parse_result result = doc.load_buffer(text.data(), text.size());
  if (!result)
    Fail(Code::kInvalidArgument, "'", path, "': malformed XML at offset ", result.offset, ": ",
         result.description());
  pugi::xml_node root = doc.child("annotation");
  if (!root) Fail(Code::kInvalidArgument, "'", path, "': no <annotation> element");
  return root;
}

VocFile ReadVocFile(const fs::path& path) {
  pugi::xml_document doc;
  pugi::xml_node root = LoadAnnotation(doc, path.string());
  std::string where = StrCat("'", path.string(), "'");
  VocFile file;
  // <filename> names the image; files without one follow VOC's <name>.jpg.
  pugi::xml_node filename = root.child("filename");
  file.file_name = "JPEGImages/" +
                   (filename ? std::string(filename.text().get()) : path.stem().string() + ".jpg");
  pugi::xml_node size = root.child("size");
  if (!size) Fail(Code::kInvalidArgument, where, ": missing <size>");
  file.width = ImageSide(size, "width", where);
  file.height = ImageSide(size, "height", where);
  int index = 0;
  for (pugi::xml_node object : root.children("object")) {
    std::string at = StrCat(where, " object[", index++, "]");
    VocObject o{ChildText(object, "name", at), ReadBox(object, file, at),
                ReadDifficult(object, at)};
    if (o.name.empty()) Fail(Code::kInvalidArgument, at, ": empty <name>");
    file.objects.push_back(std::move(o));
  }
  return file;
}

// The annotation files to read, sorted: a split's names, or every .xml.
std::vector<fs::path> AnnotationFiles(const fs::path& dir, const std::string& split) {
  fs::path annotations = dir / "Annotations";
  if (!fs::is_directory(annotations))
    Fail(Code::kNotFound, "VOC dataset '", dir.string(), "' has no Annotations/ folder");
  std::vector<fs::path> files;
  if (split.empty()) {
    for (const fs::directory_entry& e : fs::directory_iterator(annotations))
      if (e.is_regular_file() && e.path().extension() == ".xml") files.push_back(e.path());
  } else {
    fs::path list = dir / "ImageSets" / "Main" / (split + ".txt");
    std::istringstream lines(ReadFileToString(list.string()));
    for (std::string name; lines >> name;) {
      files.push_back(annotations / (name + ".xml"));
      if (!fs::is_regular_file(files.back()))
        Fail(Code::kNotFound, "'", list.string(), "' lists '", name, "', but '",
             files.back().string(), "' does not exist");
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The category names in id order (ids 1..K): the caller's classes, or the
// sorted names found.
std::vector<std::string> CategoryNames(const std::vector<VocFile>& files,
                                       const std::vector<std::string>& classes) {
  if (!classes.empty()) return classes;
  std::set<std::string> found;
  for (const VocFile& f : files)
    for (const VocObject& o : f.objects) found.insert(o.name);
  return {found.begin(), found.end()};
}

}  // namespace

DetectionDataset ReadVocDataset(const std::string& dir, const VocReadOptions& options) {
  std::vector<fs::path> paths = AnnotationFiles(dir, options.split);
  std::vector<VocFile> files;
  for (const fs::path& path : paths) files.push_back(ReadVocFile(path));
  DetectionDataset out;
  std::map<std::string, int64_t> category_ids;
  for (const std::string& name : CategoryNames(files, options.classes)) {
    int64_t id = int64_t(out.categories.size()) + 1;
    DFLOW_REQUIRE(category_ids.emplace(name, id).second, "VOC class list repeats '", name, "'");
    out.categories.push_back({id, name});
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const VocFile& f = files[i];
    int64_t image_id = int64_t(i) + 1;
    out.images.push_back({image_id, f.file_name, f.width, f.height});
    for (size_t j = 0; j < f.objects.size(); ++j) {
      const VocObject& o = f.objects[j];
      auto category = category_ids.find(o.name);
      if (category == category_ids.end())
        Fail(Code::kInvalidArgument, "'", paths[i].string(), "' object[", j, "]: class '", o.name,
             "' is not in the class list");
      int64_t id = int64_t(out.annotations.size()) + 1;
      out.annotations.push_back(
          {id, image_id, category->second, o.box, o.box[2] * o.box[3], false, o.difficult});
    }
  }
  return out;
}

namespace {

void AddText(pugi::xml_node parent, const char* name, const std::string& text) {
  parent.append_child(name).text().set(text.c_str());
}

void AddObject(pugi::xml_node root, const DetectionObject& object, const std::string& name) {
  pugi::xml_node node = root.append_child("object");
  AddText(node, "name", name);
  AddText(node, "difficult", object.difficult ? "1" : "0");
  pugi::xml_node box = node.append_child("bndbox");
  const BoxXYWH& b = object.bbox;
  AddText(box, "xmin", FormatNumber(b[0] + 1));
  AddText(box, "ymin", FormatNumber(b[1] + 1));
  AddText(box, "xmax", FormatNumber(b[0] + b[2]));
  AddText(box, "ymax", FormatNumber(b[1] + b[3]));
}

std::string AnnotationXml(const DetectionImage& image,
                          const std::vector<const DetectionObject*>& objects,
                          const std::unordered_map<int64_t, std::string>& names) {
  pugi::xml_document doc;
  pugi::xml_node root = doc.append_child("annotation");
  AddText(root, "filename", fs::path(image.file_name).filename().string());
  pugi::xml_node size = root.append_child("size");
  AddText(size, "width", std::to_string(image.width));
  AddText(size, "height", std::to_string(image.height));
  for (const DetectionObject* object : objects)
    AddObject(root, *object, names.at(object->category_id));
  std::ostringstream out;
  doc.save(out, "  ");
  return out.str();
}

}  // namespace

void WriteVocAnnotations(const std::string& dir, const DetectionDataset& dataset) {
  std::unordered_map<int64_t, std::string> names;
  for (const DetectionCategory& c : dataset.categories) names[c.id] = c.name;
  std::unordered_map<int64_t, std::vector<const DetectionObject*>> objects;  // by image id
  for (const DetectionImage& image : dataset.images) objects[image.id];
  for (const DetectionObject& a : dataset.annotations) {
    DFLOW_REQUIRE(names.count(a.category_id) && objects.count(a.image_id),
                  "WriteVocAnnotations: annotation ", a.id, " names an unknown image or category");
    objects[a.image_id].push_back(&a);
  }
  RequireUniqueStems(dataset, "WriteVocAnnotations");
  fs::path annotations = fs::path(dir) / "Annotations";
  fs::create_directories(annotations);
  for (const DetectionImage& image : dataset.images) {
    std::string stem = fs::path(image.file_name).stem().string();
    WriteFileAtomic((annotations / (stem + ".xml")).string(),
                    AnnotationXml(image, objects[image.id], names));
  }
}

}  // namespace dflow::models

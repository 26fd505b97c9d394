// COCO instances and results JSON; see coco.h.
#include "models/data/coco.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "graph/file.h"
#include "graph/json.h"
#include "graph/status.h"

namespace dflow::models {
namespace {

using Json = nlohmann::json;

// Where an entry sits, for error messages: "gt.json: annotations[3] (id 17)".
struct Entry {
  const std::string& source;
  const char* list;
  size_t index;
  const Json& value;

  std::string Where() const {
    std::string where = StrCat("'", source, "': ", list, "[", index, "]");
    if (value.is_object() && value.contains("id"))
      where += " (id " + JsonForMessage(value["id"]) + ")";
    return where;
  }
  [[noreturn]] void Bad(const std::string& what) const {
    Fail(Code::kInvalidArgument, Where(), ": ", what);
  }
  const Json& Field(const char* name) const {
    auto it = value.find(name);
    if (it == value.end()) Bad(StrCat("missing field '", name, "'"));
    return *it;
  }
  int64_t Int(const char* name) const {
    const Json& v = Field(name);
    if (!v.is_number_integer()) Bad(StrCat("'", name, "' must be an integer, got ", JsonForMessage(v)));
    return v.get<int64_t>();
  }
  double Number(const char* name) const {
    const Json& v = Field(name);
    if (!v.is_number()) Bad(StrCat("'", name, "' must be a number, got ", JsonForMessage(v)));
    return v.get<double>();
  }
  std::string String(const char* name) const {
    const Json& v = Field(name);
    if (!v.is_string()) Bad(StrCat("'", name, "' must be a string, got ", JsonForMessage(v)));
    return v.get<std::string>();
  }
  bool Flag(const char* name) const {  // optional 0/1 (or true/false), default false
    auto it = value.find(name);
    if (it == value.end()) return false;
    if (it->is_boolean()) return it->get<bool>();
    if (it->is_number_integer() && (*it == 0 || *it == 1)) return *it == 1;
    Bad(StrCat("'", name, "' must be 0 or 1, got ", JsonForMessage(*it)));
  }
  BoxXYWH Box() const {
    const Json& v = Field("bbox");
    if (!v.is_array() || v.size() != 4 || !std::all_of(v.begin(), v.end(), [](const Json& x) {
          return x.is_number();
        }))
      Bad(StrCat("'bbox' must be [x, y, width, height], got ", JsonForMessage(v)));
    BoxXYWH box{v[0].get<double>(), v[1].get<double>(), v[2].get<double>(), v[3].get<double>()};
    if (box[2] < 0 || box[3] < 0) Bad(StrCat("negative box size in bbox ", JsonForMessage(v)));
    return box;
  }
};

// root[name] as a list of objects (each checked by the caller via Entry).
const Json& List(const Json& root, const char* name, const std::string& source) {
  auto it = root.find(name);
  if (it == root.end() || !it->is_array())
    Fail(Code::kInvalidArgument, "'", source, "': missing list '", name, "'");
  return *it;
}

template <typename Fn>
void ForEachEntry(const Json& list, const char* name, const std::string& source, Fn fn) {
  for (size_t i = 0; i < list.size(); ++i) {
    Entry entry{source, name, i, list[i]};
    if (!list[i].is_object()) entry.Bad("expected an object");
    fn(entry);
  }
}

void ReadImages(const Json& root, const std::string& source, DetectionDataset& out,
                std::unordered_set<int64_t>& ids) {
  ForEachEntry(List(root, "images", source), "images", source, [&](const Entry& e) {
    DetectionImage image{e.Int("id"), e.String("file_name"), e.Int("width"), e.Int("height")};
    if (image.width < 0 || image.height < 0)
      e.Bad(StrCat("negative size ", image.width, "x", image.height));
    if (!ids.insert(image.id).second) e.Bad("repeated image id");
    out.images.push_back(std::move(image));
  });
}

void ReadCategories(const Json& root, const std::string& source, DetectionDataset& out,
                    std::unordered_set<int64_t>& ids) {
  ForEachEntry(List(root, "categories", source), "categories", source, [&](const Entry& e) {
    DetectionCategory category{e.Int("id"), e.String("name")};
    if (!ids.insert(category.id).second) e.Bad("repeated category id");
    out.categories.push_back(std::move(category));
  });
}

}  // namespace

DetectionDataset ParseCocoInstances(const std::string& text, const std::string& source) {
  Json root = ParseJson(text, source);
  if (!root.is_object())
    Fail(Code::kInvalidArgument, "'", source, "' is not a COCO instances object");
  DetectionDataset out;
  std::unordered_set<int64_t> image_ids, category_ids, annotation_ids;
  ReadImages(root, source, out, image_ids);
  ReadCategories(root, source, out, category_ids);
  ForEachEntry(List(root, "annotations", source), "annotations", source, [&](const Entry& e) {
    DetectionObject object;
    object.id = e.Int("id");
    object.image_id = e.Int("image_id");
    object.category_id = e.Int("category_id");
    object.bbox = e.Box();
    object.area = e.Number("area");
    object.iscrowd = e.Flag("iscrowd");
    object.difficult = e.Flag("difficult");
    if (!annotation_ids.insert(object.id).second) e.Bad("repeated annotation id");
    if (!image_ids.count(object.image_id)) e.Bad(StrCat("unknown image_id ", object.image_id));
    if (!category_ids.count(object.category_id))
      e.Bad(StrCat("unknown category_id ", object.category_id));
    if (object.area < 0) e.Bad(StrCat("negative area ", object.area));
    out.annotations.push_back(object);
  });
  return out;
}

DetectionDataset ReadCocoInstances(const std::string& path) {
  return ParseCocoInstances(ReadFileToString(path), path);
}

std::string CocoInstancesJson(const DetectionDataset& dataset) {
  Json images = Json::array(), annotations = Json::array(), categories = Json::array();
  for (const DetectionImage& i : dataset.images)
    images.push_back({{"id", i.id}, {"file_name", i.file_name}, {"width", i.width},
                      {"height", i.height}});
  for (const DetectionObject& a : dataset.annotations) {
    Json entry = {{"id", a.id},     {"image_id", a.image_id}, {"category_id", a.category_id},
                  {"bbox", a.bbox}, {"area", a.area},         {"iscrowd", a.iscrowd ? 1 : 0}};
    if (a.difficult) entry["difficult"] = 1;
    annotations.push_back(std::move(entry));
  }
  for (const DetectionCategory& c : dataset.categories)
    categories.push_back({{"id", c.id}, {"name", c.name}});
  // One entry per line: diffable, and still small next to the images.
  std::string out = "{\"images\": [\n";
  auto append = [&out](const Json& list) {
    for (size_t i = 0; i < list.size(); ++i)
      out += list[i].dump() + (i + 1 < list.size() ? ",\n" : "\n");
  };
  append(images);
  out += "],\n\"annotations\": [\n";
  append(annotations);
  out += "],\n\"categories\": [\n";
  append(categories);
  out += "]}\n";
  return out;
}

void WriteCocoInstances(const std::string& path, const DetectionDataset& dataset) {
  WriteFileAtomic(path, CocoInstancesJson(dataset));
}

std::vector<Detection> ParseCocoResults(const std::string& text, const std::string& source,
                                        const DetectionDataset& truth) {
  Json root = ParseJson(text, source);
  if (!root.is_array())
    Fail(Code::kInvalidArgument, "'", source, "' is not a COCO results list");
  std::unordered_set<int64_t> image_ids, category_ids;
  for (const DetectionImage& i : truth.images) image_ids.insert(i.id);
  for (const DetectionCategory& c : truth.categories) category_ids.insert(c.id);
  std::vector<Detection> out;
  out.reserve(root.size());
  ForEachEntry(root, "detections", source, [&](const Entry& e) {
    Detection d{e.Int("image_id"), e.Int("category_id"), e.Box(), e.Number("score")};
    if (!image_ids.count(d.image_id))
      e.Bad(StrCat("image_id ", d.image_id, " is not an image of the ground truth"));
    if (!category_ids.count(d.category_id))
      e.Bad(StrCat("category_id ", d.category_id, " is not a category of the ground truth"));
    out.push_back(d);
  });
  return out;
}

std::vector<Detection> ReadCocoResults(const std::string& path, const DetectionDataset& truth) {
  return ParseCocoResults(ReadFileToString(path), path, truth);
}

std::string CocoResultsJson(const std::vector<Detection>& detections) {
  std::string out = "[\n";
  for (size_t i = 0; i < detections.size(); ++i) {
    const Detection& d = detections[i];
    Json entry = {{"image_id", d.image_id}, {"category_id", d.category_id}, {"bbox", d.bbox},
                  {"score", d.score}};
    out += JsonForMessage(entry) + (i + 1 < detections.size() ? ",\n" : "\n");
  }
  return out + "]\n";
}

void WriteCocoResults(const std::string& path, const std::vector<Detection>& detections) {
  WriteFileAtomic(path, CocoResultsJson(detections));
}

}  // namespace dflow::models

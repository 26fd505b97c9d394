// points.json / points.csv datasets; see points_dataset.h.
#include "models/data/points_dataset.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "graph/file.h"
#include "graph/json.h"
#include "models/data/text_numbers.h"

namespace dflow::models {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Annotations = std::map<std::string, std::vector<Point>>;  // sorted by file name

Point ParsePoint(const Json& value, const std::string& where) {
  if (!value.is_array() || value.size() != 2 || !value[0].is_number() || !value[1].is_number())
    Fail(Code::kInvalidArgument, where, ": a point must be [x, y] with two numbers, got ",
         JsonForMessage(value));
  Point p{value[0].get<double>(), value[1].get<double>()};
  if (!std::isfinite(p.x) || !std::isfinite(p.y))
    Fail(Code::kInvalidArgument, where, ": point ", JsonForMessage(value), " is not finite");
  return p;
}

// The file's JSON, refusing an image listed twice (a JSON object may repeat
// a key, and the parser would keep one of them silently). kInvalidArgument
// names the file and the parser's own reason (NaN, 1e999, a missing comma).
Json ParsePointsJson(const std::string& path) {
  std::set<std::string> images;
  auto refuse_repeats = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::key && depth == 1 && !images.insert(parsed.get<std::string>()).second)
      Fail(Code::kInvalidArgument, "'", path, "' lists image '", parsed.get<std::string>(),
           "' twice; give all its points in one list");
    return true;
  };
  const std::string text = ReadFileToString(path);
  CheckJsonDepth(text, path);
  try {
    return Json::parse(text, refuse_repeats);
  } catch (const Json::exception& e) {
    Fail(Code::kInvalidArgument, "'", path, "': not valid JSON: ", JsonErrorMessage(e));
  }
}

Annotations ReadJson(const std::string& path) {
  Json root = ParsePointsJson(path);
  if (!root.is_object())
    Fail(Code::kInvalidArgument, "'", path, "' is not a JSON object mapping image files to "
         "lists of [x, y] points");
  Annotations out;
  for (const auto& [file, points] : root.items()) {
    std::string where = "'" + path + "', image '" + file + "'";
    if (!points.is_array()) Fail(Code::kInvalidArgument, where, ": expected a list of points");
    std::vector<Point>& list = out[file];
    for (const Json& p : points) list.push_back(ParsePoint(p, where));
  }
  return out;
}

Annotations ReadCsv(const std::string& path) {
  std::istringstream in(ReadFileToString(path));
  std::string line;
  Annotations out;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (number == 1 && line.rfind("image", 0) == 0)) continue;
    std::vector<std::string> fields;
    std::stringstream row(line);
    for (std::string field; std::getline(row, field, ',');) fields.push_back(field);
    if (line.back() == ',') fields.push_back("");
    std::string where = "'" + path + "' line " + std::to_string(number);
    if (fields.size() != 3 || fields[0].empty())
      Fail(Code::kInvalidArgument, where, ": expected 'image,x,y', got '", line, "'");
    std::vector<Point>& list = out[fields[0]];
    if (fields[1].empty() && fields[2].empty()) continue;  // an image without points
    list.push_back({ParseFiniteNumber(fields[1], where), ParseFiniteNumber(fields[2], where)});
  }
  return out;
}

}  // namespace

std::vector<AnnotatedImage> ReadPointsDataset(const std::string& dir) {
  fs::path json = fs::path(dir) / "points.json", csv = fs::path(dir) / "points.csv";
  Annotations annotations;
  if (fs::exists(json)) annotations = ReadJson(json.string());
  else if (fs::exists(csv)) annotations = ReadCsv(csv.string());
  else Fail(Code::kNotFound, "dataset '", dir, "' has neither points.json nor points.csv");
  if (annotations.empty())
    Fail(Code::kInvalidArgument, "dataset '", dir, "' annotates no images");
  std::vector<AnnotatedImage> images;
  for (auto& [file, points] : annotations) {
    fs::path path = fs::path(dir) / file;
    if (file.find("..") != std::string::npos || fs::path(file).is_absolute())
      Fail(Code::kInvalidArgument, "dataset '", dir, "': image '", file,
           "' must be a path inside the dataset folder");
    std::error_code error;  // a name the file system refuses (too long, say) is a missing image too
    if (!fs::is_regular_file(path, error))
      Fail(Code::kNotFound, "dataset '", dir, "': annotated image '", file, "' does not exist",
           error ? " (" + error.message() + ")" : "");
    images.push_back({path.string(), std::move(points)});
  }
  return images;
}

void CheckPointsInside(const AnnotatedImage& image, int64_t height, int64_t width) {
  for (size_t i = 0; i < image.points.size(); ++i) {
    const Point& p = image.points[i];
    bool inside = std::isfinite(p.x) && std::isfinite(p.y) && p.x >= 0 && p.x < width &&
                  p.y >= 0 && p.y < height;
    DFLOW_REQUIRE(inside, "image '", image.path, "': point ", i, " (", p.x, ", ", p.y,
                  ") is outside the image, which is ", width, "x", height, " pixels");
  }
}

void WritePointsJson(const std::string& dir, const std::vector<AnnotatedImage>& images) {
  Json root = Json::object();
  for (const AnnotatedImage& image : images) {
    std::string file = fs::path(image.path).lexically_relative(dir).generic_string();
    DFLOW_REQUIRE(!file.empty() && file.rfind("..", 0) != 0, "WritePointsJson: image '",
                  image.path, "' is not inside '", dir, "'");
    Json points = Json::array();
    for (const Point& p : image.points) points.push_back({p.x, p.y});
    root[file] = std::move(points);
  }
  WriteFileAtomic((fs::path(dir) / "points.json").string(), root.dump(1));
}

}  // namespace dflow::models

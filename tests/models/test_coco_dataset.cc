// COCO instances and results JSON: write-then-read round trips, and bad
// files rejected with the file, entry and field named.
#include <catch2/catch.hpp>

#include "graph/status.h"
#include "models/data/coco.h"
#include "tests/models/checkpoint_test_util.h"
#include "tests/models/detection_test_util.h"

using namespace dflow;
using namespace dflow::models;
using dflow::testing::ExpectError;

namespace {

DetectionDataset SampleDataset() {
  DetectionDataset d = dflow::testing::MakeTruth(2, {1, 7});
  d.images[1].file_name = "dir/b \"quoted\".jpg";
  dflow::testing::AddObject(d, 1, 1, {0.5, 1.25, 10.125, 20});
  dflow::testing::AddObject(d, 2, 7, {3, 4, 100, 50}, /*crowd=*/true, /*area=*/1234.5);
  dflow::testing::AddObject(d, 2, 1, {1e-3, 2, 0, 0}, false, -1, /*difficult=*/true);
  return d;
}

const char* kValid = R"({"images": [{"id": 1, "file_name": "a.png", "width": 64, "height": 48}],
  "categories": [{"id": 3, "name": "cat"}],
  "annotations": [{"id": 9, "image_id": 1, "category_id": 3, "bbox": [1, 2, 3, 4], "area": 12}]})";

}  // namespace

TEST_CASE("coco dataset: instances and results round trip", "[coco_dataset]") {
  dflow::testing::ScratchDir dir("coco_dataset");
  DetectionDataset d = SampleDataset();
  WriteCocoInstances(dir / "gt.json", d);
  DetectionDataset back = ReadCocoInstances(dir / "gt.json");
  CHECK(back == d);
  CHECK(back.annotations[1].iscrowd);
  CHECK(back.annotations[2].difficult);
  CHECK(back.annotations[1].area == 1234.5);

  std::vector<Detection> dets = {{1, 1, {0.1, 0.2, 30.3, 40.4}, 0.987654321},
                                 {2, 7, {1, 2, 3, 4}, 0}};
  WriteCocoResults(dir / "dt.json", dets);
  CHECK(ReadCocoResults(dir / "dt.json", d) == dets);
  CHECK(ParseCocoResults("[]", "empty.json", d).empty());
}

TEST_CASE("coco dataset: iscrowd is optional, area is not", "[coco_dataset]") {
  DetectionDataset d = ParseCocoInstances(kValid, "ok.json");
  REQUIRE(d.annotations.size() == 1);
  CHECK_FALSE(d.annotations[0].iscrowd);
  CHECK(d.annotations[0].bbox == BoxXYWH{1, 2, 3, 4});
  std::string no_area = kValid;
  no_area.replace(no_area.find(", \"area\": 12"), 12, "");
  ExpectError([&] { ParseCocoInstances(no_area, "gt.json"); }, Code::kInvalidArgument,
              {"gt.json", "annotations[0]", "(id 9)", "missing field 'area'"});
}

TEST_CASE("coco dataset: bad instances files are named", "[coco_dataset]") {
  auto bad = [](const std::string& from, const std::string& to,
                const std::vector<std::string>& parts) {
    std::string text = kValid;
    size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    ExpectError([&] { ParseCocoInstances(text, "gt.json"); }, Code::kInvalidArgument, parts);
  };
  bad("12}]}", "12}", {"gt.json", "not valid JSON"});
  bad("\"width\": 64", "\"width\": -64",
      {"gt.json", "images[0]", "(id 1)", "negative size -64x48"});
  bad("\"image_id\": 1", "\"image_id\": 5", {"annotations[0]", "(id 9)", "unknown image_id 5"});
  bad("\"category_id\": 3", "\"category_id\": 4", {"annotations[0]", "unknown category_id 4"});
  bad("[1, 2, 3, 4]", "[1, 2, -3, 4]", {"annotations[0]", "negative box size"});
  bad("[1, 2, 3, 4]", "[1, 2, 3]", {"annotations[0]", "'bbox' must be [x, y, width, height]"});
  bad("\"id\": 3", "\"id\": \"3\"", {"categories[0]", "'id' must be an integer"});
  bad("\"name\": \"cat\"", "\"title\": \"cat\"", {"categories[0]", "missing field 'name'"});
  bad("\"categories\"", "\"classes\"", {"gt.json", "missing list 'categories'"});
  ExpectError([] { ReadCocoInstances("/nonexistent/gt.json"); }, Code::kNotFound,
              {"/nonexistent/gt.json"});
}

TEST_CASE("coco dataset: bad results files are named", "[coco_dataset]") {
  DetectionDataset truth = ParseCocoInstances(kValid, "gt.json");
  auto bad = [&](const std::string& text, const std::vector<std::string>& parts) {
    ExpectError([&] { ParseCocoResults(text, "dt.json", truth); }, Code::kInvalidArgument, parts);
  };
  const std::string ok = R"({"image_id": 1, "category_id": 3, "bbox": [0, 0, 5, 5], "score": 0.5})";
  CHECK(ParseCocoResults("[" + ok + "]", "dt.json", truth).size() == 1);
  bad("[" + ok + ", {\"image_id\": 2, \"category_id\": 3, \"bbox\": [0, 0, 5, 5], \"score\": 1}]",
      {"dt.json", "detections[1]", "image_id 2 is not an image of the ground truth"});
  bad("[" + ok + ", {\"image_id\": 1, \"category_id\": 8, \"bbox\": [0, 0, 5, 5], \"score\": 1}]",
      {"detections[1]", "category_id 8 is not a category"});
  bad(R"([{"image_id": 1, "category_id": 3, "bbox": [0, 0, 5, 5]}])",
      {"detections[0]", "missing field 'score'"});
  bad(R"([{"image_id": 1, "category_id": 3, "bbox": [0, 0, 5, -1], "score": 1}])",
      {"detections[0]", "negative box size"});
  bad("{\"not\": \"a list\"}", {"dt.json", "not a COCO results list"});
  bad("[1, 2", {"dt.json", "not valid JSON"});
}

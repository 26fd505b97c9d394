// YOLO label folders: hand-made labels read to exact boxes against the sizes
// in tiny PNG headers, COCO -> YOLO -> COCO through `convert`'s writer (YOLO
// stores floats: equal within 1e-6 relative), and bad files refused with the
// file and line named.
#include <catch2/catch.hpp>
#include <filesystem>

#include "graph/status.h"
#include "models/data/coco.h"
#include "models/data/detection_formats.h"
#include "models/data/image.h"
#include "models/data/yolo.h"
#include "tests/models/checkpoint_test_util.h"
#include "tests/models/detection_test_util.h"

using namespace dflow;
using namespace dflow::models;
using dflow::testing::ExpectError;
using dflow::testing::ScratchDir;
using dflow::testing::WriteDatasetFile;

namespace {

namespace fs = std::filesystem;

void WriteImage(const ScratchDir& dir, const std::string& name, int64_t width, int64_t height) {
  fs::create_directories(fs::path(dir / name).parent_path());
  WritePng(dir / name, Tensor::Zeros(DType::kUInt8, {height, width, 3}));
}

void CheckNear(const DetectionDataset& got, const DetectionDataset& want) {
  CHECK(got.images == want.images);
  CHECK(got.categories == want.categories);
  REQUIRE(got.annotations.size() == want.annotations.size());
  for (size_t i = 0; i < got.annotations.size(); ++i) {
    const DetectionObject &g = got.annotations[i], &w = want.annotations[i];
    CHECK((g.id == w.id && g.image_id == w.image_id && g.category_id == w.category_id));
    for (int k = 0; k < 4; ++k) CHECK(g.bbox[k] == Approx(w.bbox[k]).epsilon(1e-6).margin(1e-9));
    CHECK(g.area == Approx(w.area).epsilon(1e-6));
  }
}

}  // namespace

TEST_CASE("yolo dataset: boxes from normalised labels and image headers", "[yolo]") {
  ScratchDir dir("yolo_read");
  WriteImage(dir, "images/a.png", 40, 20);
  WriteImage(dir, "images/b.png", 10, 10);  // no label file: no objects
  WriteImage(dir, "images/c.PNG", 8, 4);
  WriteDatasetFile(dir / "images/notes.txt", "not an image: ignored");
  WriteDatasetFile(dir / "labels/a.txt", "1 0.5 0.5 0.5 0.5\r\n0 0.125 0.25 0.25 0.5\n\n");
  WriteDatasetFile(dir / "labels/c.txt", "");
  WriteDatasetFile(dir / "obj.names", "bird\r\ncar\n");
  DetectionDataset d = ReadYoloDataset(dir.path().string());
  CHECK(d.images == std::vector<DetectionImage>{{1, "images/a.png", 40, 20},
                                                {2, "images/b.png", 10, 10},
                                                {3, "images/c.PNG", 8, 4}});
  CHECK(d.categories == std::vector<DetectionCategory>{{1, "bird"}, {2, "car"}});
  CHECK(d.annotations ==
        std::vector<DetectionObject>{{1, 1, 2, {10, 5, 20, 10}, 200, false, false},
                                     {2, 1, 1, {0, 0, 10, 10}, 100, false, false}});
  // classes.txt wins over obj.names.
  WriteDatasetFile(dir / "classes.txt", "cat\ndog\n");
  CHECK(ReadYoloDataset(dir.path().string()).categories[1].name == "dog");
}

TEST_CASE("yolo dataset: COCO -> YOLO -> COCO within float precision", "[yolo]") {
  ScratchDir dir("yolo_round_trip");
  DetectionDataset coco;
  for (int i = 1; i <= 3; ++i) {
    coco.images.push_back({i, "images/img" + std::to_string(i) + ".png", 30 * i + 1, 47});
    WriteImage(dir, "coco/" + coco.images.back().file_name, 30 * i + 1, 47);
  }
  coco.categories = {{1, "person"}, {2, "bus"}, {3, "kite"}};  // YOLO keeps this order
  dflow::testing::AddObject(coco, 1, 3, {0, 0, 31, 47});
  dflow::testing::AddObject(coco, 3, 1, {1.5, 2.25, 17.125, 30.3});
  dflow::testing::AddObject(coco, 3, 2, {80.1, 40, 10.9, 7});
  WriteCocoInstances(dir / "coco/annotations.json", coco);

  WriteDetectionDataset(dir / "yolo", LoadDetectionDataset(dir / "coco"), DetectionFormat::kYolo,
                        dir / "coco");
  CHECK(DetectDetectionFormat(dir / "yolo") == DetectionFormat::kYolo);
  CHECK(fs::file_size(dir / "yolo/labels/img2.txt") == 0);
  DetectionDataset yolo = ReadYoloDataset(dir / "yolo");
  CheckNear(yolo, coco);
  WriteDetectionDataset(dir / "back", yolo, DetectionFormat::kCoco, dir / "yolo");
  CheckNear(ReadCocoInstances(dir / "back/annotations.json"), coco);
}

TEST_CASE("yolo dataset: bad files name the file and line", "[yolo]") {
  ScratchDir dir("yolo_bad");
  ExpectError([&] { ReadYoloDataset(dir.path().string()); }, Code::kNotFound,
              {"neither classes.txt nor obj.names"});
  WriteDatasetFile(dir / "classes.txt", "bird\n\ncar\n");
  ExpectError([&] { ReadYoloDataset(dir.path().string()); }, Code::kInvalidArgument,
              {"classes.txt' line 2", "empty class name"});
  WriteDatasetFile(dir / "classes.txt", "bird\ncar\n");
  ExpectError([&] { ReadYoloDataset(dir.path().string()); }, Code::kNotFound,
              {"has no images/ folder"});
  WriteImage(dir, "images/a.png", 4, 4);
  auto expect_bad = [&](const std::string& labels, const std::vector<std::string>& parts) {
    WriteDatasetFile(dir / "labels/a.txt", labels);
    std::vector<std::string> all = parts;
    all.push_back("a.txt' line ");
    ExpectError([&] { ReadYoloDataset(dir.path().string()); }, Code::kInvalidArgument, all);
  };
  expect_bad("0 0.5 0.5 0.5\n", {"line 1", "expected 'class cx cy w h', got '0 0.5 0.5 0.5'"});
  expect_bad("0 0.5 0.5 0.5 0.5\n1 0.5 0.5 0.5 0.5 7\n", {"line 2", "expected 'class cx cy w h'"});
  expect_bad("0 0.5 0.5 0.5 zero\n", {"line 1", "'zero' is not a finite number"});
  expect_bad("0.5 0.5 0.5 0.5 0.5\n", {"line 1", "'0.5' is not a whole number"});
  expect_bad("\n2 0.5 0.5 0.5 0.5\n", {"line 2", "class 2 is out of range: there are 2 classes"});
  expect_bad("-1 0.5 0.5 0.5 0.5\n", {"line 1", "class -1 is out of range"});
  expect_bad("0 1.5 0.5 0.5 0.5\n", {"line 1", "cx = 1.5 is outside [0, 1]"});
  expect_bad("0 0.5 0.5 0.5 -0.1\n", {"line 1", "h = -0.1 is outside [0, 1]"});
  expect_bad("0 0.5 0.5 nan 0.5\n", {"line 1", "'nan' is not a finite number"});
  WriteDatasetFile(dir / "labels/a.txt", "0 0.5 0.5 0.5 0.5\n");
  WriteDatasetFile(dir / "labels/b.txt", "0 0.5 0.5 0.5 0.5\n");
  ExpectError([&] { ReadYoloDataset(dir.path().string()); }, Code::kInvalidArgument,
              {"b.txt' has no image in images/"});
  fs::remove(dir / "labels/b.txt");
  WriteImage(dir, "images/a.jpg", 4, 4);
  ExpectError([&] { ReadYoloDataset(dir.path().string()); }, Code::kInvalidArgument,
              {"YOLO images '", "images/a.", "would share one label file"});
}

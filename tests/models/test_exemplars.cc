// The exemplar memory's pieces (models/data/exemplars.h): per-class counts
// and seeded choice, herding's mean matching, joining folders into one
// training set, and the memory folder written whole.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include "graph/file.h"
#include "models/data/coco.h"
#include "models/data/exemplars.h"
#include "tests/models/detection_test_util.h"

using namespace dflow;
using namespace dflow::models;
namespace fs = std::filesystem;

namespace {

// 40 images: images 1-30 hold class 1, images 21-40 class 2 (21-30 both).
DetectionDataset TwoClasses() {
  DetectionDataset data = testing::MakeTruth(40, {1, 2});
  for (int64_t i = 1; i <= 30; ++i) testing::AddObject(data, i, 1, {1, 1, 10, 10});
  for (int64_t i = 21; i <= 40; ++i) testing::AddObject(data, i, 2, {20, 20, 10, 10});
  return data;
}

int64_t ImagesOf(const DetectionDataset& data, const std::vector<int64_t>& ids, int64_t category) {
  std::set<int64_t> chosen(ids.begin(), ids.end()), found;
  for (const DetectionObject& o : data.annotations)
    if (o.category_id == category && chosen.count(o.image_id)) found.insert(o.image_id);
  return static_cast<int64_t>(found.size());
}

}  // namespace

TEST_CASE("Exemplars: a share of each class's images, seeded", "[exemplars]") {
  DetectionDataset data = TwoClasses();
  std::vector<int64_t> a = ChooseRandomExemplars(data, 0.1, 7);
  // ceil(0.1 * 30) = 3 for class 1, ceil(0.1 * 20) = 2 for class 2; an image
  // chosen for both classes counts once.
  CHECK(ImagesOf(data, a, 1) >= 3);
  CHECK(ImagesOf(data, a, 2) >= 2);
  CHECK(a.size() <= 5);
  CHECK(std::is_sorted(a.begin(), a.end()));
  CHECK(ChooseRandomExemplars(data, 0.1, 7) == a);
  CHECK(ChooseRandomExemplars(data, 0.1, 8) != a);
  CHECK(ChooseRandomExemplars(data, 0, 7).empty());
  CHECK(ChooseRandomExemplars(data, 1, 7).size() == 40);
  CHECK_THROWS_WITH(ChooseRandomExemplars(data, 1.5, 7), Catch::Contains("within [0, 1], got 1.5"));
}

TEST_CASE("Exemplars: herding keeps the chosen mean closest to the class mean", "[exemplars]") {
  DetectionDataset data = testing::MakeTruth(4, {1});
  for (int64_t i = 1; i <= 4; ++i) testing::AddObject(data, i, 1, {1, 1, 10, 10});
  // The class mean is (1, 1): images 2 and 3 are equally near it (the first
  // is taken); then image 3 brings the pair's mean to (1, 1) exactly.
  std::vector<std::vector<float>> features = {{4, 4}, {1.5f, 1.5f}, {0.5f, 0.5f}, {-2, -2}};
  CHECK(ChooseHerdingExemplars(data, features, 0.25) == std::vector<int64_t>{2});
  CHECK(ChooseHerdingExemplars(data, features, 0.5) == std::vector<int64_t>{2, 3});
  CHECK_THROWS_WITH(ChooseHerdingExemplars(data, {{1}}, 0.5), Catch::Contains("1 feature vectors for 4 images"));
}

TEST_CASE("Exemplars: folders join into one set in the run's class order", "[exemplars]") {
  DetectionDataset a = TwoClasses();                        // class1, class2
  DetectionDataset b = testing::MakeTruth(2, {5});          // class5
  testing::AddObject(b, 2, 5, {3, 3, 4, 4});
  DetectionDataset joined = JoinDatasets({{a, "/data/a"}, {b, "relative/b"}}, {"class5", "class1", "class2"}, {9, 1, 2});
  REQUIRE(joined.images.size() == 42);
  CHECK(joined.images[0].file_name == "/data/a/image1.png");
  CHECK(fs::path(joined.images[41].file_name).is_absolute());
  CHECK(joined.images[41].id == 42);
  CHECK(joined.categories == std::vector<DetectionCategory>{{9, "class5"}, {1, "class1"}, {2, "class2"}});
  const DetectionObject& last = joined.annotations.back();
  CHECK(last.image_id == 42);
  CHECK(last.category_id == 9);
  CHECK(last.id == static_cast<int64_t>(joined.annotations.size()));
  CHECK_THROWS_WITH(JoinDatasets({{b, "relative/b"}}, {"class1"}, {1}),
                    Catch::Contains("relative/b: category \"class5\" is not one of the run's classes"));
}

TEST_CASE("Exemplars: the memory folder holds copies and a COCO file, and is replaced whole",
          "[exemplars]") {
  fs::path dir = fs::temp_directory_path() / "dflow_test_exemplars";
  fs::remove_all(dir);
  fs::create_directories(dir / "source");
  DetectionDataset data = testing::MakeTruth(3, {1});
  for (int64_t i = 1; i <= 3; ++i) {
    testing::AddObject(data, i, 1, {1, 1, 5, 5});
    WriteFileAtomic((dir / "source" / ("image" + std::to_string(i) + ".png")).string(), "pixels " + std::to_string(i));
  }
  DetectionDataset joined = JoinDatasets({{data, (dir / "source").string()}}, {"class1"}, {1});
  std::string memory = (dir / "memory").string();
  WriteDatasetFolder(memory, SelectImages(joined, {1, 3}));
  DetectionDataset stored = ReadCocoInstances(memory + "/annotations.json");
  REQUIRE(stored.images.size() == 2);
  CHECK(stored.images[1].file_name == "images/000003.png");
  CHECK(ReadFileToString(memory + "/images/000003.png") == "pixels 3");
  CHECK(stored.annotations.size() == 2);
  WriteDatasetFolder(memory, SelectImages(joined, {2}));
  CHECK(ReadCocoInstances(memory + "/annotations.json").images.size() == 1);
  CHECK(!fs::exists(memory + "/images/000003.png"));
  CHECK(!fs::exists(memory + ".tmp"));
  CHECK(!fs::exists(memory + ".old"));
  fs::remove_all(dir);
}

// Pascal VOC folders: hand-made XML read to exact COCO boxes (VOC pixels are
// 1-based and inclusive), round trips through VOC and through `convert`'s
// writer, and every kind of bad file refused with the file and object named.
#include <catch2/catch.hpp>
#include <filesystem>

#include "graph/status.h"
#include "models/data/coco.h"
#include "models/data/detection_formats.h"
#include "models/data/voc.h"
#include "tests/models/checkpoint_test_util.h"
#include "tests/models/detection_test_util.h"

using namespace dflow;
using namespace dflow::models;
using dflow::testing::ExpectError;
using dflow::testing::ScratchDir;
using dflow::testing::WriteDatasetFile;

namespace {

namespace fs = std::filesystem;

// An annotation of a 500x375 image whose <object>s are `objects`.
std::string VocXml(const std::string& filename, const std::string& objects) {
  return "<annotation>\n  <folder>VOC2007</folder>\n  <filename>" + filename +
         "</filename>\n  <size><width>500</width><height>375</height><depth>3</depth></size>\n" +
         objects + "</annotation>\n";
}

// An <object> with <bndbox> children `box` (e.g. "<xmin>1</xmin>...").
std::string VocObject(const std::string& name, const std::string& box,
                      const std::string& difficult = "0") {
  return "  <object><name>" + name + "</name><pose>Left</pose><truncated>0</truncated>" +
         "<difficult>" + difficult + "</difficult><bndbox>" + box + "</bndbox></object>\n";
}

std::string Box(const std::string& xmin, const std::string& ymin, const std::string& xmax,
                const std::string& ymax) {
  return "<xmin>" + xmin + "</xmin><ymin>" + ymin + "</ymin><xmax>" + xmax + "</xmax><ymax>" +
         ymax + "</ymax>";
}

// Two images written out of order: 000002 has a dog and a difficult person.
void WriteSample(const ScratchDir& dir) {
  WriteDatasetFile(
      dir / "Annotations/000002.xml",
      VocXml("000002.jpg", VocObject("dog", Box("48", "240", "195", "371")) +
                               VocObject("person", Box("8", "12", "352", "375"), "1")));
  WriteDatasetFile(dir / "Annotations/000001.xml",
                   VocXml("000001.jpg", VocObject("cat", Box("1", "1", "500", "375"))));
}

// Images 1..3 under `folder`, sorted names as the categories, objects in
// image order: what a VOC or YOLO reader gives back.
DetectionDataset ConvertibleDataset(const std::string& folder) {
  DetectionDataset d;
  for (int i = 1; i <= 3; ++i)
    d.images.push_back({i, folder + "/img" + std::to_string(i) + ".jpg", 64 * i, 48});
  d.categories = {{1, "bird"}, {2, "car"}};
  dflow::testing::AddObject(d, 1, 2, {0, 0, 64, 48});
  dflow::testing::AddObject(d, 1, 1, {10, 20, 5, 7}, false, -1, /*difficult=*/true);
  dflow::testing::AddObject(d, 3, 1, {100, 1, 92, 46});
  return d;
}

}  // namespace

TEST_CASE("voc dataset: exact boxes, difficult flags, sorted ids", "[voc]") {
  ScratchDir dir("voc_read");
  WriteSample(dir);
  DetectionDataset d = ReadVocDataset(dir.path().string());
  REQUIRE(d.images.size() == 2);
  CHECK(d.images[0] == DetectionImage{1, "JPEGImages/000001.jpg", 500, 375});
  CHECK(d.images[1] == DetectionImage{2, "JPEGImages/000002.jpg", 500, 375});
  CHECK(d.categories == std::vector<DetectionCategory>{{1, "cat"}, {2, "dog"}, {3, "person"}});
  REQUIRE(d.annotations.size() == 3);
  // The whole image: pixels 1..500 cover [0, 500) continuously.
  CHECK(d.annotations[0] == DetectionObject{1, 1, 1, {0, 0, 500, 375}, 500 * 375, false, false});
  CHECK(d.annotations[1] == DetectionObject{2, 2, 2, {47, 239, 148, 132}, 148 * 132, false, false});
  CHECK(d.annotations[2].bbox == BoxXYWH{7, 11, 345, 364});
  CHECK(d.annotations[2].difficult);
}

TEST_CASE("voc dataset: a split and a fixed class list", "[voc]") {
  ScratchDir dir("voc_split");
  WriteSample(dir);
  WriteDatasetFile(dir / "ImageSets/Main/val.txt", "000002\n");
  auto read = [&](const VocReadOptions& options) {
    return ReadVocDataset(dir.path().string(), options);
  };
  DetectionDataset d = read({"val", kVocClasses});
  REQUIRE(d.images.size() == 1);
  CHECK(d.images[0].file_name == "JPEGImages/000002.jpg");
  CHECK(d.categories.size() == 20);
  CHECK(d.annotations[0].category_id == 12);  // dog
  CHECK(d.categories[11].name == "dog");
  CHECK(LoadDetectionDataset(dir.path().string(), {"val", {}}) == read({"val", {}}));
  ExpectError([&] { read({"", {"dog", "person"}}); }, Code::kInvalidArgument,
              {"000001.xml", "object[0]", "class 'cat'", "class list"});
  WriteDatasetFile(dir / "ImageSets/Main/test.txt", "000001\n000009\n");
  ExpectError([&] { read({"test", {}}); }, Code::kNotFound,
              {"test.txt", "'000009'", "000009.xml"});
  ExpectError([&] { read({"train", {}}); }, Code::kNotFound, {"train.txt"});
}

TEST_CASE("voc dataset: COCO -> VOC -> COCO is exact", "[voc]") {
  ScratchDir dir("voc_round_trip");
  DetectionDataset d = ConvertibleDataset("JPEGImages");
  WriteVocAnnotations(dir.path().string(), d);
  CHECK(ReadVocDataset(dir.path().string()) == d);

  // Through the converter: COCO folder -> VOC folder -> COCO folder, images copied.
  DetectionDataset coco = ConvertibleDataset("images");
  for (const DetectionImage& image : coco.images)
    WriteDatasetFile(dir / "coco/" + image.file_name, "not decoded " + image.file_name);
  WriteCocoInstances(dir / "coco/annotations.json", coco);
  WriteDetectionDataset(dir / "voc", LoadDetectionDataset(dir / "coco"), DetectionFormat::kVoc,
                        dir / "coco");
  CHECK(DetectDetectionFormat(dir / "voc") == DetectionFormat::kVoc);
  CHECK(LoadDetectionDataset(dir / "voc") == d);
  CHECK(dflow::testing::ReadBytes(dir / "voc/JPEGImages/img3.jpg") ==
        "not decoded images/img3.jpg");
  WriteDetectionDataset(dir / "back", LoadDetectionDataset(dir / "voc"), DetectionFormat::kCoco,
                        dir / "voc");
  CHECK(LoadDetectionDataset(dir / "back") == coco);
  ExpectError([&] { LoadDetectionDataset(dir / "back", {"val", {}}); }, Code::kInvalidArgument,
              {"applies to Pascal VOC folders", "back' is a coco dataset"});
  ExpectError([&] { WriteDetectionDataset(dir / "back", coco, DetectionFormat::kVoc, ""); },
              Code::kAlreadyExists, {"back", "not an empty folder"});
}

TEST_CASE("voc dataset: images that would share a file are refused before writing", "[voc]") {
  ScratchDir dir("voc_twins");
  std::string source = dir.path().string();  // holds no images: nothing may be copied
  DetectionDataset twins = ConvertibleDataset("images");
  twins.images[1].file_name = "other/img1.png";
  auto convert = [&](const DetectionDataset& d, DetectionFormat format) {
    WriteDetectionDataset(dir / "out", d, format, source);
  };
  ExpectError([&] { convert(twins, DetectionFormat::kVoc); }, Code::kInvalidArgument,
              {"voc: images 'images/img1.jpg' (id 1) and 'other/img1.png' (id 2)",
               "would share one annotation file"});
  ExpectError([&] { WriteVocAnnotations(dir / "out", twins); }, Code::kInvalidArgument,
              {"WriteVocAnnotations: images"});
  twins.images[1].file_name = "other/img1.jpg";
  ExpectError([&] { convert(twins, DetectionFormat::kCoco); }, Code::kInvalidArgument,
              {"images 1 and 2 would both be copied to 'images/img1.jpg'"});
  ExpectError([&] { convert(ConvertibleDataset("images"), DetectionFormat::kCoco); },
              Code::kNotFound, {"image 'images/img1.jpg' (id 1) is not in"});
  CHECK_FALSE(fs::exists(dir / "out"));
}

TEST_CASE("voc dataset: bad files name the file and object", "[voc]") {
  ScratchDir dir("voc_bad");
  ExpectError([&] { ReadVocDataset(dir.path().string()); }, Code::kNotFound,
              {"has no Annotations/ folder"});
  auto expect_bad = [&](const std::string& xml, const std::vector<std::string>& parts) {
    fs::remove_all(dir / "Annotations");
    WriteDatasetFile(dir / "Annotations/bad.xml", xml);
    std::vector<std::string> all = parts;
    all.push_back("bad.xml");
    ExpectError([&] { ReadVocDataset(dir.path().string()); }, Code::kInvalidArgument, all);
  };
  std::string dog = VocObject("dog", Box("48", "240", "195", "371"));
  expect_bad("<annotation><size><width>5</width></annotation>", {"malformed XML at offset"});
  expect_bad("<notvoc/>", {"no <annotation> element"});
  expect_bad("<annotation>" + dog + "</annotation>", {"missing <size>"});
  expect_bad(VocXml("a.jpg", dog).replace(VocXml("a.jpg", dog).find("<height>"), 20, ""),
             {"missing <height>"});
  expect_bad(VocXml("a.jpg", dog + "<object><name>cat</name></object>"),
             {"object[1]", "missing <bndbox>"});
  expect_bad(VocXml("a.jpg", VocObject("dog", "<xmin>1</xmin><ymin>1</ymin><xmax>2</xmax>")),
             {"object[0]", "missing <ymax>"});
  expect_bad(VocXml("a.jpg", VocObject("dog", Box("1", "1", "2x", "2"))),
             {"object[0] <xmax>", "'2x' is not a finite number"});
  expect_bad(VocXml("a.jpg", dog + VocObject("dog", Box("30", "1", "20", "2"))),
             {"object[1]", "inverted box", "30..20"});
  expect_bad(VocXml("a.jpg", VocObject("dog", Box("0", "1", "20", "2"))),
             {"object[0]", "outside the 500x375 image"});
  expect_bad(VocXml("a.jpg", VocObject("dog", Box("1", "1", "20", "376"))),
             {"object[0]", "outside the 500x375 image"});
  expect_bad(VocXml("a.jpg", VocObject("dog", Box("1", "1", "2", "2"), "2")),
             {"object[0]", "<difficult> must be 0 or 1"});
  expect_bad(VocXml("a.jpg", VocObject("", Box("1", "1", "2", "2"))),
             {"object[0]", "empty <name>"});
  expect_bad("<annotation><size><width>-5</width><height>3</height></size></annotation>",
             {"<width> must be positive"});
}

// Pascal VOC AP against hand-computed cases: 11-point vs all-point on a known
// precision/recall curve, difficult objects ignored, repeated hits, classes
// without objects left out of mAP.
#include <catch2/catch.hpp>

#include "models/metrics/voc_eval.h"
#include "tests/models/detection_test_util.h"

using namespace dflow::models;
using dflow::testing::AddObject;
using dflow::testing::MakeTruth;

// Hits and misses by score: TP, FP, TP, FP, TP over 4 objects.
//   recall    .25  .25  .5   .5   .75
//   precision 1    .5   2/3  .5   .6
// 11-point: recall >= 0, .1, .2 -> 1; .3, .4, .5 -> 2/3; .6, .7 -> .6; .8+ -> 0.
// All-point: envelope 1 on (0, .25], 2/3 on (.25, .5], .6 on (.5, .75], 0 after.
constexpr double kElevenPointAP = (3 * 1.0 + 3 * 2.0 / 3 + 2 * 0.6) / 11;
constexpr double kAllPointAP = 0.25 * (1 + 2.0 / 3 + 0.6);

TEST_CASE("voc: 11-point and all-point AP of a known curve", "[voc]") {
  std::vector<double> recall = {.25, .25, .5, .5, .75};
  std::vector<double> precision = {1, .5, 2.0 / 3, .5, .6};
  CHECK(VocAveragePrecision(recall, precision, VocApMethod::kElevenPoint) ==
        Approx(kElevenPointAP));
  CHECK(VocAveragePrecision(recall, precision, VocApMethod::kAllPoint) == Approx(kAllPointAP));
  CHECK(VocAveragePrecision({}, {}, VocApMethod::kAllPoint) == 0);
  CHECK(VocAveragePrecision({1}, {1}, VocApMethod::kElevenPoint) == Approx(1));
}

TEST_CASE("voc: 11-point thresholds are numpy.arange(0, 1.1, 0.1)'s doubles", "[voc]") {
  // As the Python references (py-faster-rcnn, ssd.pytorch) compute them:
  // 6 * 0.1 = 0.6000000000000001 > 3 / 5, so recall 3/5 reaches the
  // thresholds 0 .. .5 only (MATLAB's 0:0.1:1 would also count .6).
  CHECK(VocAveragePrecision({3.0 / 5}, {1}, VocApMethod::kElevenPoint) == Approx(6.0 / 11));
  CHECK(VocAveragePrecision({0.3}, {1}, VocApMethod::kElevenPoint) == Approx(3.0 / 11));
}

TEST_CASE("voc: difficult objects are neither hits nor misses", "[voc]") {
  DetectionDataset truth = MakeTruth(2, {1, 2});
  for (int i = 0; i < 4; ++i) AddObject(truth, 1 + i % 2, 1, {100.0 * i, 0, 50, 50});
  AddObject(truth, 1, 1, {0, 200, 50, 50}, false, -1, /*difficult=*/true);
  std::vector<Detection> dets = {
      {1, 1, {0, 0, 50, 50}, 0.9},      // hit (object 0, image 1)
      {1, 1, {0, 0, 50, 50}, 0.8},      // object 0 again: false positive
      {2, 1, {100, 0, 50, 50}, 0.7},    // hit (object 1, image 2)
      {1, 1, {0, 202, 50, 50}, 0.65},   // the difficult object: neither
      {2, 1, {0, 0, 50, 50}, 0.6},      // object 0's box, but in image 2: false positive
      {1, 1, {205, 5, 50, 50}, 0.5}};   // object 2, IoU 2025/2975 = 0.68: hit
  for (auto method : {VocApMethod::kElevenPoint, VocApMethod::kAllPoint}) {
    VocEvalResult r = EvaluateVoc(truth, dets, {.method = method});
    REQUIRE(r.classes.size() == 2);
    CHECK(r.classes[0].objects == 4);
    CHECK(r.classes[0].detections == 6);
    CHECK(r.classes[0].ap ==
          Approx(method == VocApMethod::kElevenPoint ? kElevenPointAP : kAllPointAP));
    CHECK(r.classes[1].objects == 0);
    CHECK(r.classes[1].ap == -1);  // no objects: left out of mAP
    CHECK(r.map == r.classes[0].ap);
  }
  std::string table = FormatVocTable(EvaluateVoc(truth, dets));
  CHECK(table.find("class1") != std::string::npos);
  CHECK(table.find("mAP") != std::string::npos);
}

TEST_CASE("voc: a hit needs IoU strictly above the threshold", "[voc]") {
  DetectionDataset truth = MakeTruth(1, {1});
  AddObject(truth, 1, 1, {0, 0, 100, 100});
  // IoU 5000 / 10000 = 0.5 exactly: not above 0.5.
  CHECK(EvaluateVoc(truth, {{1, 1, {0, 0, 100, 50}, 0.9}}).map == 0);
  CHECK(EvaluateVoc(truth, {{1, 1, {0, 0, 100, 51}, 0.9}}).map == Approx(1));
}

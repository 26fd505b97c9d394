// COCO box evaluation against hand-computed cases: perfect detections, a
// false positive ranked first, IoU thresholds, crowd regions, a category
// without ground truth, the maxDets cut, area ranges, the summary table.
#include <catch2/catch.hpp>

#include "models/metrics/coco_eval.h"
#include "tests/models/coco_eval_reference.h"
#include "tests/models/detection_test_util.h"

using namespace dflow;
using namespace dflow::models;
using dflow::testing::AddObject;
using dflow::testing::EvaluateCocoReference;
using dflow::testing::ReferenceCocoEval;
using dflow::testing::MakeTruth;

namespace {

// Precision is tp / (tp + fp + eps) as in pycocotools, so a perfect AP can be
// 1 - 2e-16: compare with Approx.
enum Stat { kAP, kAP50, kAP75, kAPs, kAPm, kAPl, kAR1, kAR10, kAR100, kARs, kARm, kARl };

CocoStats Evaluate(const DetectionDataset& truth, const std::vector<Detection>& dets) {
  return EvaluateCoco(truth, dets, {.threads = 2}).stats;
}

}  // namespace

TEST_CASE("coco: perfect detections give AP 1", "[coco]") {
  DetectionDataset truth = MakeTruth(2, {1, 2});
  std::vector<Detection> dets;
  for (int image = 1; image <= 2; ++image)
    for (int cat = 1; cat <= 2; ++cat) {
      BoxXYWH box{10.0 * image, 20.0 * cat, 100, 120};  // large (area > 96^2)
      AddObject(truth, image, cat, box);
      dets.push_back({image, cat, box, 0.5 + 0.1 * cat});
    }
  CocoStats s = Evaluate(truth, dets);
  for (Stat i : {kAP, kAP50, kAP75, kAPl, kAR1, kAR10, kAR100, kARl}) CHECK(s[i] == Approx(1));
  for (Stat i : {kAPs, kAPm, kARs, kARm}) CHECK(s[i] == -1);  // no small or medium objects
}

TEST_CASE("coco: a false positive ranked above the true positive halves AP", "[coco]") {
  DetectionDataset truth = MakeTruth(1, {1});
  AddObject(truth, 1, 1, {0, 0, 100, 100});
  // Recall [0, 1], precision [0, 1/2]: the envelope is 1/2 at every recall point.
  std::vector<Detection> dets = {{1, 1, {200, 200, 50, 50}, 0.9}, {1, 1, {0, 0, 100, 100}, 0.8}};
  CocoStats s = Evaluate(truth, dets);
  CHECK(s[kAP] == Approx(0.5));
  CHECK(s[kAP50] == Approx(0.5));
  CHECK(s[kAR100] == Approx(1));
  CHECK(s[kAR1] == 0);  // one detection per image: only the false positive
  // The false positive is medium-sized: outside the large range and unmatched, so ignored there.
  CHECK(s[kAPl] == Approx(1));
  CHECK(s[kAPm] == -1);
}

TEST_CASE("coco: IoU thresholds are inclusive; AP averages over them", "[coco]") {
  DetectionDataset truth = MakeTruth(1, {1});
  AddObject(truth, 1, 1, {0, 0, 100, 100});
  // IoU 6000 / 10000 = 0.6: a hit at .50, .55, .60, a miss at .65 and above.
  CocoEvalResult r = EvaluateCoco(truth, {{1, 1, {0, 0, 100, 60}, 0.9}});
  CHECK(r.stats[kAP] == Approx(0.3));
  CHECK(r.stats[kAP50] == Approx(1));
  CHECK(r.stats[kAP75] == 0);
  CHECK(r.Recall(2, 0, 0, 2) == Approx(1));
  CHECK(r.Recall(3, 0, 0, 2) == 0);
}

TEST_CASE("coco: a crowd region absorbs several detections, which are ignored", "[coco]") {
  DetectionDataset truth = MakeTruth(1, {1});
  AddObject(truth, 1, 1, {0, 0, 50, 50});
  AddObject(truth, 1, 1, {100, 0, 200, 200}, /*crowd=*/true);
  // Two detections inside the crowd rank first (IoU over their own area: 1),
  // then the true positive, then a false positive: precision [0, 0, 1, 1/2]
  // with both crowd hits ignored, envelope 1 everywhere. Counting them as
  // false positives would give 1/3, letting the crowd take only one 1/2.
  std::vector<Detection> dets = {{1, 1, {110, 10, 50, 50}, 0.95},
                                 {1, 1, {150, 50, 50, 50}, 0.9},
                                 {1, 1, {0, 0, 50, 50}, 0.8},
                                 {1, 1, {400, 300, 50, 50}, 0.6}};
  CocoStats s = Evaluate(truth, dets);
  CHECK(s[kAP] == Approx(1));
  CHECK(s[kAR100] == Approx(1));  // the crowd region is not an object to recall
}

TEST_CASE("coco: a detection prefers a counted object to a crowd region", "[coco]") {
  DetectionDataset truth = MakeTruth(1, {1});
  AddObject(truth, 1, 1, {100, 0, 200, 200}, /*crowd=*/true);
  AddObject(truth, 1, 1, {100, 0, 50, 50});
  // IoU 1 with the crowd (listed first), 2500/3000 with the object: the
  // object is taken while its IoU passes (counted objects sort first): a hit
  // at .50 .. .80; above, the crowd takes it (ignored, no hit): AP 7/10.
  CocoStats s = Evaluate(truth, {{1, 1, {100, 0, 50, 60}, 0.9}});
  CHECK(s[kAP50] == Approx(1));
  CHECK(s[kAP] == Approx(0.7));
}

TEST_CASE("coco: a category without ground truth is left out of the means", "[coco]") {
  DetectionDataset truth = MakeTruth(1, {1, 2});
  AddObject(truth, 1, 1, {0, 0, 100, 100});
  std::vector<Detection> dets = {{1, 1, {0, 0, 100, 100}, 0.9}, {1, 2, {0, 0, 100, 100}, 0.9}};
  CocoEvalResult r = EvaluateCoco(truth, dets);
  CHECK(r.CategoryAP(0) == Approx(1));
  CHECK(r.CategoryAP(1) == -1);
  CHECK(r.stats[kAP] == Approx(1));  // not (1 + 0) / 2
  CHECK(r.stats[kAR100] == Approx(1));
}

TEST_CASE("coco: at most maxDets detections per image and category count", "[coco]") {
  DetectionDataset truth = MakeTruth(1, {1});
  AddObject(truth, 1, 1, {0, 0, 100, 100});
  std::vector<Detection> dets;
  for (int i = 0; i < 10; ++i) dets.push_back({1, 1, {300, 300, 40, 40}, 0.9 - 0.01 * i});
  dets.push_back({1, 1, {0, 0, 100, 100}, 0.1});  // the 11th is the hit
  CocoEvalResult r = EvaluateCoco(truth, dets);
  CHECK(r.stats[kAP] == Approx(1.0 / 11));  // at 100: precision 1/11 at recall 1
  CHECK(r.stats[kAR100] == Approx(1));
  CHECK(r.stats[kAR10] == 0);
  CHECK(r.stats[kAR1] == 0);
  CHECK(r.Precision(0, 0, 0, 0, /*maxDets 10*/ 1) == 0);
}

TEST_CASE("coco: area ranges use the annotation area for objects, w*h for detections", "[coco]") {
  DetectionDataset truth = MakeTruth(1, {1});
  AddObject(truth, 1, 1, {0, 0, 20, 20});     // small (400)
  AddObject(truth, 1, 1, {100, 0, 50, 50});   // medium (2500)
  AddObject(truth, 1, 1, {300, 0, 120, 120});  // large, never found
  std::vector<Detection> dets = {{1, 1, {500, 400, 10, 10}, 0.95},  // small false positive
                                 {1, 1, {0, 0, 20, 20}, 0.9},
                                 {1, 1, {100, 0, 50, 50}, 0.8}};
  CocoStats s = Evaluate(truth, dets);
  // all: FP, TP, TP over 3 objects: envelope 2/3 up to recall 2/3 (67 of 101 points).
  CHECK(s[kAP] == Approx(67.0 / 101 * 2 / 3));
  CHECK(s[kAPs] == Approx(0.5));  // FP, TP, ignored (hit on a medium object)
  CHECK(s[kAPm] == Approx(1));    // the small false positive is ignored in the medium range
  CHECK(s[kAPl] == 0);
  CHECK(s[kAR100] == Approx(2.0 / 3));
  CHECK(s[kAR10] == Approx(2.0 / 3));
  CHECK(s[kAR1] == 0);
  CHECK(s[kARs] == Approx(1));
  CHECK(s[kARm] == Approx(1));
  CHECK(s[kARl] == 0);

  truth.annotations[1].area = 900;  // a mask area says small, whatever the box
  s = Evaluate(truth, dets);
  CHECK(s[kAPm] == -1);
  CHECK(s[kARm] == -1);
  CHECK(s[kAPs] == Approx(2.0 / 3));  // FP, TP, TP over 2 small objects
}

// Random scenes with every case mixed in: all area ranges, crowds, mask
// areas below the box area, scores in steps of 0.05 (ties within and across
// images), more than 100 detections of one class in an image, a class with
// detections only. The reference is pycocotools transcribed plainly.
TEST_CASE("coco: equals pycocotools' algorithm transcribed, at any thread count", "[coco]") {
  DetectionDataset truth = MakeTruth(12, {1, 2, 3, 5, 8});
  std::vector<Detection> dets;
  uint32_t state = 7;
  auto next = [&state](int mod) {
    state = state * 1664525u + 1013904223u;  // a fixed LCG: the same scenes everywhere
    return int(state >> 8) % mod;
  };
  auto size = [&next] { return double(next(3) == 0 ? 2 + next(30) : 2 + next(200)); };
  for (int i = 0; i < 400; ++i) {
    BoxXYWH box{double(next(500)), double(next(400)), size(), size()};
    int64_t image = 1 + next(12), cat = truth.categories[next(4)].id;  // never class 8
    if (i % 3 == 0) {
      double area = box[2] * box[3] * (next(2) ? 1 : 0.6);
      AddObject(truth, image, cat, box, /*crowd=*/next(12) == 0, area);
    }
    BoxXYWH jittered{box[0] + next(9) - 4, box[1] + next(9) - 4, box[2] + next(5), box[3]};
    int64_t det_cat = next(4) ? cat : truth.categories[next(5)].id;
    dets.push_back({image, det_cat, jittered, next(20) * 0.05});
  }
  for (int i = 0; i < 130; ++i)  // image 1, class 1: past the cap of 100
    dets.push_back({1, 1, {double(next(300)), double(next(300)), 30, 40}, next(20) * 0.05});
  ReferenceCocoEval want = EvaluateCocoReference(truth, dets);
  for (int threads : {1, 4}) {
    CocoEvalResult got = EvaluateCoco(truth, dets, {.threads = threads});
    REQUIRE(got.precision.size() == want.precision.size());
    CHECK(got.precision == want.precision);
    CHECK(got.recall == want.recall);
    CHECK(got.stats[kAP] > 0.05);
    CHECK(got.stats[kAP] < 0.95);
    CHECK(got.CategoryAP(4) == -1);
  }
}

TEST_CASE("coco: the summary table and JSON line", "[coco]") {
  CocoStats stats = {0.5, 0.51, 0.52, -1, 0.54, 0.55, 0.56, 0.57, 0.58, 0.59, 0.6, 0.61};
  std::string table = FormatCocoSummary(stats);
  CHECK(table.rfind(" Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = "
                    "0.500\n"
                    " Average Precision  (AP) @[ IoU=0.50      | area=   all | maxDets=100 ] = "
                    "0.510\n",
                    0) == 0);
  CHECK(table.find(" Average Precision  (AP) @[ IoU=0.50:0.95 | area= small | maxDets=100 ] = "
                   "-1.000\n") != std::string::npos);
  CHECK(table.find(" Average Recall     (AR) @[ IoU=0.50:0.95 | area=   all | maxDets=  1 ] = "
                   "0.560\n") != std::string::npos);
  CHECK(std::count(table.begin(), table.end(), '\n') == 12);
  std::string json = CocoStatsJson(stats);
  CHECK(json.rfind("{\"AP\":0.5,\"AP50\":0.51,", 0) == 0);
  CHECK(json.find("\"APs\":-1.0,") != std::string::npos);
  CHECK(json.find("\"ARl\":0.61}") != std::string::npos);
}

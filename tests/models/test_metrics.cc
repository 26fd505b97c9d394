// Counting metrics: hand-computed MAE/RMSE/MRE overall and per bin, MRE
// without zero-count images, bin parsing and its errors.
#include <cmath>

#include <catch2/catch.hpp>

#include "models/metrics/counting.h"
#include "tests/models/checkpoint_test_util.h"

using namespace dflow;
using namespace dflow::models;

TEST_CASE("count errors overall and per bin", "[metrics]") {
  // truth 0, 1, 6, 10; predicted 1, 1, 4, 13: errors 1, 0, 2, 3.
  CountReport r = EvaluateCounts({1, 1, 4, 13}, {0, 1, 6, 10});
  CHECK(r.overall.images == 4);
  CHECK(r.overall.mae == Approx(1.5));
  CHECK(r.overall.rmse == Approx(std::sqrt(14.0 / 4)));
  CHECK(r.overall.mre_images == 3);  // the zero-count image is left out
  CHECK(r.overall.mre == Approx((0 + 2.0 / 6 + 3.0 / 10) / 3));
  REQUIRE(r.bins.size() == 7);
  CHECK(r.per_bin[0].images == 1);  // "0"
  CHECK(r.per_bin[0].mae == 1);
  CHECK(r.per_bin[0].mre_images == 0);
  CHECK(r.per_bin[5].images == 1);  // "5-7"
  CHECK(r.per_bin[6].images == 1);  // "8+"
  CHECK(r.per_bin[6].mae == 3);
  CHECK(r.per_bin[2].images == 0);
  std::string table = FormatCountReport(r);
  CHECK(table.find("5-7") != std::string::npos);
  CHECK(table.find("all") != std::string::npos);
  // Bin "2" is empty: dashes, not errors of zero.
  CHECK(table.find("  2             0        -        -        -\n") != std::string::npos);
}

TEST_CASE("count bins parse and reject nonsense", "[metrics]") {
  auto bins = ParseCountBins("0,1-4,5+");
  REQUIRE(bins.size() == 3);
  CHECK((bins[1].lo == 1 && bins[1].hi == 4));
  CHECK((bins[2].Contains(100) && !bins[2].Contains(4)));
  testing::ExpectError([] { ParseCountBins("0,x"); }, Code::kInvalidArgument, {"'x' is not a count"});
  testing::ExpectError([] { ParseCountBins("0-4,3"); }, Code::kInvalidArgument, {"overlaps"});
  testing::ExpectError([] { ParseCountBins("5-2"); }, Code::kInvalidArgument, {"is empty"});
  testing::ExpectError([] { EvaluateCounts({1}, {1, 2}); }, Code::kInvalidArgument,
                       {"1 predictions for 2 true counts"});
}

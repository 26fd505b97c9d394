// All-gather, and the mean of the ranks' gradients through a codec
// (dist/collectives/compressed_all_reduce.h): every rank gets the same bits,
// the float32 "codec" is the exact rank-order mean, 1-bit keeps its
// error-feedback promise across steps, and what travels is the encoded size.
#include <catch2/catch.hpp>
#include <cmath>

#include "dist/collectives/compressed_all_reduce.h"
#include "tests/dist/collectives/collective_test_util.h"
#include "tests/ops/op_test_util.h"

namespace dflow {
namespace {

using Catch::Contains;
using dist::Bytes;
using dist::CodecKind;
using dist::Communicator;
using testing::RandomTensor;
using testing::RunRanks;

const Shape kShape{6, 5};

Tensor RankGradient(int rank, int step) { return RandomTensor(DType::kFloat32, kShape, 100 * step + rank); }

TEST_CASE("all-gather hands every rank each rank's bytes, in rank order", "[collectives][codec]") {
  for (int ranks = 1; ranks <= 4; ++ranks) {
    std::vector<std::vector<Bytes>> gathered(ranks);
    auto outcomes = RunRanks(ranks, [&](Communicator& comm) {
      Bytes mine(5, static_cast<uint8_t>(10 + comm.rank()));
      gathered[comm.rank()] = comm.AllGather("blocks", mine);
    });
    for (int r = 0; r < ranks; ++r) {
      INFO("ranks " << ranks << ", rank " << r);
      REQUIRE_FALSE(outcomes[r].error);
      REQUIRE(gathered[r].size() == static_cast<size_t>(ranks));
      for (int k = 0; k < ranks; ++k) CHECK(gathered[r][k] == Bytes(5, static_cast<uint8_t>(10 + k)));
    }
  }
}

TEST_CASE("all-gather of different lengths is an error naming the ranks", "[collectives][codec]") {
  auto outcomes = RunRanks(3, [&](Communicator& comm) {
    comm.AllGather("blocks", Bytes(comm.rank() == 2 ? 4 : 5, 1));
  });
  for (const auto& outcome : outcomes) {
    REQUIRE(outcome.error);
    CHECK_THAT(outcome.error->message(), Contains("rank 2") && Contains("uint8[4]"));
  }
}

// Runs `steps` steps of CompressedAllReduce on `ranks` ranks; means[r][s] is
// rank r's result at step s.
std::vector<std::vector<Tensor>> RunMeans(int ranks, CodecKind kind, int steps, size_t* sent = nullptr) {
  std::vector<std::vector<Tensor>> means(ranks);
  auto outcomes = RunRanks(ranks, [&](Communicator& comm) {
    dist::CompressedAllReduce reduce(comm, kind, {{"w", DType::kFloat32, kShape}});
    for (int step = 0; step < steps; ++step)
      means[comm.rank()].push_back(reduce.Mean({RankGradient(comm.rank(), step)})[0]);
    if (sent && comm.rank() == 0) *sent = comm.payload_bytes_sent();
  });
  for (const auto& outcome : outcomes) REQUIRE_FALSE(outcome.error);
  return means;
}

TEST_CASE("through the float32 codec the mean is the rank-order mean, bit for bit", "[collectives][codec]") {
  auto means = RunMeans(3, CodecKind::kNone, 2);
  for (int step = 0; step < 2; ++step) {
    Tensor expected = RankGradient(0, step);
    float* e = expected.data<float>();
    for (int r = 1; r < 3; ++r)
      for (int64_t i = 0; i < expected.NumElements(); ++i) e[i] += RankGradient(r, step).data<float>()[i];
    for (int64_t i = 0; i < expected.NumElements(); ++i) e[i] /= 3.0f;
    for (int r = 0; r < 3; ++r) CHECK(means[r][step].Equals(expected));
  }
}

TEST_CASE("1-bit: every rank gets the same bits, and error feedback keeps the running sum close",
          "[collectives][codec]") {
  const int ranks = 3, steps = 40;
  size_t sent = 0;
  auto means = RunMeans(ranks, CodecKind::kOneBit, steps, &sent);
  for (int r = 1; r < ranks; ++r)
    for (int s = 0; s < steps; ++s) CHECK(means[r][s].Equals(means[0][s]));
  // Sum over steps of the 1-bit means vs of the exact means: the residuals
  // carry what each step lost, so the gap stays bounded (one step's worth)
  // while the sums themselves grow.
  double worst_gap = 0, exact_size = 0;
  std::vector<double> exact(kShape.NumElements(), 0), approx(kShape.NumElements(), 0);
  for (int s = 0; s < steps; ++s)
    for (int64_t i = 0; i < kShape.NumElements(); ++i) {
      for (int r = 0; r < ranks; ++r) exact[i] += RankGradient(r, s).data<float>()[i] / ranks;
      approx[i] += means[0][s].data<float>()[i];
    }
  for (int64_t i = 0; i < kShape.NumElements(); ++i) {
    worst_gap = std::max(worst_gap, std::abs(exact[i] - approx[i]));
    exact_size = std::max(exact_size, std::abs(exact[i]));
  }
  INFO("worst gap " << worst_gap << ", largest exact sum " << exact_size);
  CHECK(worst_gap < 1.0);  // 0.45 here, over 40 steps whose exact sums reach 4.2
  // A [6, 5] gradient: 5 columns x 2 floats + 30 bits = 44 bytes instead of 120.
  CHECK(sent == static_cast<size_t>(steps * (ranks - 1) * 44));
}

TEST_CASE("CompressedAllReduce refuses what its codec cannot take", "[collectives][codec]") {
  auto outcomes = RunRanks(1, [&](Communicator& comm) {
    CHECK_THROWS_WITH(dist::CompressedAllReduce(comm, CodecKind::kOneBit, {{"i", DType::kInt32, kShape}}),
                      Contains("'i' is int32"));
    dist::CompressedAllReduce reduce(comm, CodecKind::kOneBit, {{"w", DType::kFloat32, kShape}});
    CHECK_THROWS_WITH(reduce.Mean({}), Contains("0 gradients for 1 specs"));
    CHECK_THROWS(reduce.Mean({RandomTensor(DType::kFloat32, Shape{2, 2}, 1)}));
  });
  REQUIRE_FALSE(outcomes[0].error);
}

}  // namespace
}  // namespace dflow

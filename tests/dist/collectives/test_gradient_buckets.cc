#include <catch2/catch.hpp>

#include "dist/collectives/gradient_buckets.h"
#include "tests/dist/collectives/collective_test_util.h"

namespace dflow {
namespace {

using Catch::Contains;
using dist::GradientBuckets;
using dist::GradientSpec;

// 4 + 6 + 2 + 20 floats; with 40-byte buckets: {0, 1}, {2}, {3}.
const std::vector<GradientSpec> kSpecs = {{"dense_1/b", DType::kFloat32, Shape{4}},
                                          {"dense_1/w", DType::kFloat32, Shape{2, 3}},
                                          {"dense_0/b", DType::kFloat32, Shape{2}},
                                          {"dense_0/w", DType::kFloat32, Shape{4, 5}}};
const dist::BucketOptions kSmallBuckets{.bucket_bytes = 40};

Tensor Gradient(int index, int rank, int step) {
  Tensor t(DType::kFloat32, kSpecs[index].shape);
  for (int64_t i = 0; i < t.NumElements(); ++i)
    t.data<float>()[i] = static_cast<float>(rank * 4 + index + i + step);
  return t;
}

TEST_CASE("gradients are packed into buckets in order, breaking at the size", "[collectives]") {
  dist::InProcessNetwork network(1);
  dist::Communicator comm(network.endpoint(0));
  GradientBuckets buckets(comm, kSpecs, kSmallBuckets);
  CHECK(buckets.num_buckets() == 3);
  CHECK(buckets.bucket_of(0) == 0);
  CHECK(buckets.bucket_of(1) == 0);
  CHECK(buckets.bucket_of(2) == 1);
  CHECK(buckets.bucket_of(3) == 2);
  GradientBuckets one_bucket(comm, kSpecs);
  CHECK(one_bucket.num_buckets() == 1);
}

TEST_CASE("bucketed all-reduce returns each gradient's mean, step after step", "[collectives]") {
  const int ranks = 3;
  std::vector<std::vector<std::vector<Tensor>>> results(ranks);
  auto outcomes = testing::RunRanks(ranks, [&](dist::Communicator& comm) {
    GradientBuckets buckets(comm, kSpecs, kSmallBuckets);
    for (int step = 0; step < 2; ++step) {
      // Rank 1 produces its gradients in another order: buckets still match.
      for (int k = 0; k < 4; ++k) {
        int i = comm.rank() == 1 ? 3 - k : k;
        buckets.Ready(i, Gradient(i, comm.rank(), step));
      }
      results[comm.rank()].push_back(buckets.Finish());
    }
  });
  for (int r = 0; r < ranks; ++r) {
    REQUIRE_FALSE(outcomes[r].error);
    for (int step = 0; step < 2; ++step)
      for (int i = 0; i < 4; ++i) {
        // mean over ranks of rank*4 + index + element + step
        Tensor expected = Gradient(i, 1, step);
        CHECK(results[r][step][i].Equals(expected));
      }
  }
}

TEST_CASE("fp16 on the wire halves the bytes and stays within float16 rounding",
          "[collectives]") {
  for (bool fp16 : {false, true}) {
    std::vector<std::vector<Tensor>> results(2);
    std::vector<size_t> sent(2);
    testing::RunRanks(2, [&](dist::Communicator& comm) {
      dist::BucketOptions options = kSmallBuckets;
      options.fp16_on_wire = fp16;
      GradientBuckets buckets(comm, kSpecs, options);
      for (int i = 0; i < 4; ++i) {
        Tensor g = Gradient(i, comm.rank(), 0);
        for (float& v : g.flat<float>()) v = v / 3 + 1000;  // not exact in float16
        buckets.Ready(i, g);
      }
      results[comm.rank()] = buckets.Finish();
      sent[comm.rank()] = comm.payload_bytes_sent();
    });
    INFO("fp16 " << fp16);
    CHECK(sent[0] == (fp16 ? 32u * 2 : 32u * 4));  // 32 elements, half of them sent per phase
    for (int i = 0; i < 4; ++i) {
      Tensor exact = Gradient(i, 0, 0);
      for (int64_t k = 0; k < exact.NumElements(); ++k) {
        float expected = ((Gradient(i, 0, 0).data<float>()[k] / 3 + 1000) +
                          (Gradient(i, 1, 0).data<float>()[k] / 3 + 1000)) / 2;
        CHECK(results[0][i].data<float>()[k] == Approx(expected).epsilon(fp16 ? 2e-3 : 1e-6));
      }
      CHECK(results[0][i].Equals(results[1][i]));
    }
  }
}

TEST_CASE("a full bucket is reduced before the later gradients exist", "[collectives]") {
  std::vector<int> reduced_early(2, -1);
  auto outcomes = testing::RunRanks(2, [&](dist::Communicator& comm) {
    GradientBuckets buckets(comm, kSpecs, kSmallBuckets);
    buckets.Ready(0, Gradient(0, comm.rank(), 0));
    buckets.Ready(1, Gradient(1, comm.rank(), 0));
    // Bucket 0 is complete: its all-reduce runs while "backprop" goes on.
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (buckets.buckets_reduced() < 1 && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    reduced_early[comm.rank()] = buckets.buckets_reduced();
    buckets.Ready(2, Gradient(2, comm.rank(), 0));
    buckets.Ready(3, Gradient(3, comm.rank(), 0));
    buckets.Finish();
  });
  for (int r = 0; r < 2; ++r) {
    REQUIRE_FALSE(outcomes[r].error);
    CHECK(reduced_early[r] == 1);
  }
}

TEST_CASE("gradient buckets reject bad hand-overs", "[collectives]") {
  dist::InProcessNetwork network(1);
  dist::Communicator comm(network.endpoint(0));
  CHECK_THROWS_WITH(GradientBuckets(comm, {}), Contains("no gradients given"));
  CHECK_THROWS_WITH(GradientBuckets(comm, {{"w", DType::kFloat32, Shape{-1, 3}}}),
                    Contains("gradient 'w' needs a float32/float64 dtype and a fully "
                                      "defined shape, got float32[?,3]"));
  GradientBuckets buckets(comm, kSpecs);
  CHECK_THROWS_WITH(buckets.Ready(4, Gradient(0, 0, 0)), Contains("index 4 is out of range 0..3"));
  CHECK_THROWS_WITH(buckets.Ready(1, Gradient(0, 0, 0)),
                    Contains("gradient 'dense_1/w' should be float32[2,3], got float32[4]"));
  buckets.Ready(0, Gradient(0, 0, 0));
  CHECK_THROWS_WITH(buckets.Ready(0, Gradient(0, 0, 0)), Contains("handed over twice"));
  CHECK_THROWS_WITH(buckets.Finish(),
                    Contains("these gradients were handed over: 'dense_1/w', 'dense_0/b'"));
}

TEST_CASE("a failed bucket all-reduce is thrown by Finish on every rank", "[collectives]") {
  auto outcomes = testing::RunRanks(2, [&](dist::Communicator& comm) {
    dist::BucketOptions options = kSmallBuckets;
    options.name = comm.rank() == 0 ? "grads" : "other";
    GradientBuckets buckets(comm, kSpecs, options);
    for (int i = 0; i < 4; ++i) buckets.Ready(i, Gradient(i, comm.rank(), 0));
    buckets.Finish();
  });
  for (const auto& outcome : outcomes) {
    REQUIRE(outcome.error);
    CHECK_THAT(outcome.error->message(), Contains("'grads/bucket:0'"));
    CHECK_THAT(outcome.error->message(), Contains("'other/bucket:0'"));
  }
}

}  // namespace
}  // namespace dflow

#include <catch2/catch.hpp>

#include "dist/training/gradient_accumulator.h"
#include "tests/dist/collectives/collective_test_util.h"

namespace dflow {
namespace {

using Catch::Contains;
using dist::Communicator;
using dist::ReduceOp;
using testing::RunRanks;

// Rank r's contribution: exactly representable, so any order sums exactly.
Tensor RankValues(int rank, int64_t n) {
  Tensor t(DType::kFloat32, Shape{n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = 0.5f * (rank + 1) + 0.25f * (i % 13);
  return t;
}

TEST_CASE("all-reduce sums over 1 to 4 ranks, odd sizes included", "[collectives]") {
  for (auto order : {dist::SumOrder::kRing, dist::SumOrder::kRankOrder})
  for (int ranks = 1; ranks <= 4; ++ranks) {
    for (int64_t n : {0, 1, 3, 7, 1000, 1001}) {
      std::vector<Tensor> results(ranks);
      auto outcomes = RunRanks(ranks, [&](Communicator& comm) {
        Tensor t = RankValues(comm.rank(), n);
        comm.AllReduce("grads", t);
        results[comm.rank()] = t;
      }, {.sum_order = order});
      for (int r = 0; r < ranks; ++r) {
        INFO("order " << static_cast<int>(order) << ", ranks " << ranks << ", n " << n << ", rank " << r);
        REQUIRE_FALSE(outcomes[r].error);
        Tensor expected = Tensor::Zeros(DType::kFloat32, Shape{n});
        for (int k = 0; k < ranks; ++k)
          for (int64_t i = 0; i < n; ++i) expected.data<float>()[i] += RankValues(k, n).data<float>()[i];
        CHECK(results[r].Equals(expected));
      }
    }
  }
}

TEST_CASE("each rank sends 2(N-1)/N of the data", "[collectives]") {
  const int64_t n = 1200;  // divisible by 1..4
  for (auto order : {dist::SumOrder::kRing, dist::SumOrder::kRankOrder})
  for (int ranks = 1; ranks <= 4; ++ranks) {
    std::vector<size_t> sent(ranks);
    RunRanks(ranks, [&](Communicator& comm) {
      Tensor t = RankValues(comm.rank(), n);
      comm.AllReduce("grads", t);
      sent[comm.rank()] = comm.payload_bytes_sent();
    }, {.sum_order = order});
    for (int r = 0; r < ranks; ++r)
      CHECK(sent[r] == static_cast<size_t>(2 * (ranks - 1) * n * 4 / ranks));
  }
}

TEST_CASE("the sum of chunk c runs in ring order from rank c, equal on every rank and run",
          "[collectives]") {
  // Values whose float sum depends on the order: 1e8 + 1 + ... loses the ones.
  const int ranks = 3;
  const std::vector<float> contribution = {1e8f, 1.0f, -1e8f};
  auto run = [&] {
    std::vector<Tensor> results(ranks);
    RunRanks(ranks, [&](Communicator& comm) {
      Tensor t = Tensor::FromVector<float>(std::vector<float>(3, contribution[comm.rank()]));
      comm.AllReduce("order", t);
      results[comm.rank()] = t;
    });
    return results;
  };
  auto first = run();
  auto second = run();
  // Chunk c (one element each) sums x_c + x_c+1 + x_c+2 in float.
  std::vector<float> expected(3);
  for (int c = 0; c < ranks; ++c) {
    float sum = contribution[c];
    for (int k = 1; k < ranks; ++k) sum = contribution[(c + k) % ranks] + sum;
    expected[c] = sum;
  }
  for (int r = 0; r < ranks; ++r) {
    CHECK(first[r].ToVector<float>() == expected);
    CHECK(first[r].Equals(second[r]));
  }
}

TEST_CASE("rank order gives a parameter server's bits: x_0 + x_1 + ... for every chunk",
          "[collectives]") {
  const int ranks = 3;
  const std::vector<float> contribution = {1e8f, 1.0f, -1e8f};
  std::vector<Tensor> results(ranks);
  RunRanks(ranks, [&](Communicator& comm) {
    Tensor t = Tensor::FromVector<float>(std::vector<float>(5, contribution[comm.rank()]));
    comm.AllReduce("order", t, ReduceOp::kMean);
    results[comm.rank()] = t;
  }, {.sum_order = dist::SumOrder::kRankOrder});
  dist::SyncGradientAccumulator ps({{"g", DType::kFloat32, Shape{5}}}, ranks);
  for (int w = ranks - 1; w >= 0; --w)
    ps.Push(w, 0, {Tensor::FromVector<float>(std::vector<float>(5, contribution[w]))});
  Tensor ps_mean = ps.TakeMean(std::chrono::steady_clock::now() + std::chrono::seconds(10))[0];
  float expected = ((contribution[0] + contribution[1]) + contribution[2]) / 3;  // 0: 1e8 + 1 rounds to 1e8
  for (const Tensor& t : results) {
    CHECK(t.ToVector<float>() == std::vector<float>(5, expected));
    CHECK(t.Equals(ps_mean));
  }
}

TEST_CASE("mean, float64 and integer sums", "[collectives]") {
  std::vector<Tensor> means(3), ints(3);
  auto outcomes = RunRanks(3, [&](Communicator& comm) {
    Tensor m = Tensor::FromVector<double>({3.0 * comm.rank(), 1.5});
    comm.AllReduce("mean", m, ReduceOp::kMean);
    Tensor i = Tensor::FromVector<int64_t>({comm.rank() + 1, -2}, Shape{2, 1});
    comm.AllReduce("ints", i);
    means[comm.rank()] = m;
    ints[comm.rank()] = i;
  });
  for (int r = 0; r < 3; ++r) {
    REQUIRE_FALSE(outcomes[r].error);
    CHECK(means[r].ToVector<double>() == std::vector<double>{3.0, 1.5});
    CHECK(ints[r].ToVector<int64_t>() == std::vector<int64_t>{6, -6});
  }
}

TEST_CASE("float16 all-reduce rounds each addition to float16", "[collectives]") {
  // Rank 0 has 2048, ranks 1 and 2 have 1 (float16 spacing at 2048 is 2).
  std::vector<Tensor> results(3), means(3);
  RunRanks(3, [&](Communicator& comm) {
    float value = comm.rank() == 0 ? 2048 : 1;
    Tensor t = Tensor::FromVector<float>({value, value, value}).CastTo(DType::kFloat16);
    Tensor m = t.Clone();
    comm.AllReduce("h", t);
    comm.AllReduce("m", m, ReduceOp::kMean);
    results[comm.rank()] = t.CastTo(DType::kFloat32);
    means[comm.rank()] = m.CastTo(DType::kFloat32);
  });
  // Chunk c starts at rank c: 2048 + 1 rounds to 2048 (twice) in chunks 0
  // and 2; chunk 1 adds 1 + 1 first and reaches 2050 exactly.
  for (int r = 0; r < 3; ++r) {
    CHECK(results[r].ToVector<float>() == std::vector<float>{2048, 2050, 2048});
    CHECK(means[r].ToVector<float>() == std::vector<float>{682.5f, 683.5f, 682.5f});
  }
}

TEST_CASE("broadcast copies rank 0's tensor everywhere", "[collectives]") {
  std::vector<Tensor> results(4);
  RunRanks(4, [&](Communicator& comm) {
    Tensor t = Tensor::FromVector<int32_t>({comm.rank(), 10 * comm.rank(), 7}, Shape{3, 1});
    comm.Broadcast("init/w", t);
    results[comm.rank()] = t;
  });
  for (const Tensor& t : results) CHECK(t.ToVector<int32_t>() == std::vector<int32_t>{0, 0, 7});
}

// Every rank raises, and the message names the odd rank and the others.
void CheckAllFailWith(const std::vector<testing::RankOutcome>& outcomes, Code code,
                      const std::vector<std::string>& fragments) {
  for (size_t r = 0; r < outcomes.size(); ++r) {
    INFO("rank " << r);
    REQUIRE(outcomes[r].error);
    CHECK(outcomes[r].error->code() == code);
    for (const std::string& fragment : fragments)
      CHECK_THAT(outcomes[r].error->message(), Contains(fragment));
  }
}

TEST_CASE("ranks that disagree on name, dtype, shape or sequence all fail", "[collectives]") {
  SECTION("name") {
    auto outcomes = RunRanks(4, [](Communicator& comm) {
      Tensor t = RankValues(comm.rank(), 5);
      comm.AllReduce(comm.rank() == 2 ? "bias" : "weights", t);
    });
    CheckAllFailWith(outcomes, Code::kFailedPrecondition,
                     {"rank 0, 1, 3: all_reduce(sum) 'weights' float32[5] #0",
                      "rank 2: all_reduce(sum) 'bias'"});
  }
  SECTION("shape and dtype") {
    auto outcomes = RunRanks(3, [](Communicator& comm) {
      Tensor t = comm.rank() == 1 ? Tensor::Zeros(DType::kFloat64, Shape{5})
                                  : Tensor::Zeros(DType::kFloat32, Shape{comm.rank() + 4});
      comm.AllReduce("g", t);
    });
    CheckAllFailWith(outcomes, Code::kFailedPrecondition,
                     {"rank 0: all_reduce(sum) 'g' float32[4]", "rank 1: all_reduce(sum) 'g' float64[5]",
                      "rank 2: all_reduce(sum) 'g' float32[6]"});
  }
  SECTION("sequence: one rank skipped a collective") {
    auto outcomes = RunRanks(2, [](Communicator& comm) {
      Tensor t = RankValues(comm.rank(), 4);
      if (comm.rank() == 0) comm.Broadcast("init", t);
      comm.AllReduce("g", t);
    });
    CheckAllFailWith(outcomes, Code::kFailedPrecondition,
                     {"rank 0: broadcast 'init' float32[4] #0", "rank 1: all_reduce(sum) 'g' float32[4] #0"});
  }
}

TEST_CASE("a missing rank is a timeout naming it on every other rank", "[collectives]") {
  // Long enough that a thread starting late under load is not taken for a missing rank.
  dist::CollectiveOptions quick{.timeout = std::chrono::milliseconds(1000)};
  auto body = [](Communicator& comm) {
    Tensor t = RankValues(comm.rank(), 9);
    comm.AllReduce("g", t);
  };
  SECTION("a member") {
    auto outcomes = RunRanks(4, body, quick, {2});
    outcomes.erase(outcomes.begin() + 2);
    CheckAllFailWith(outcomes, Code::kUnavailable,
                     {"rank 2 did not reach collective all_reduce(sum) 'g'", "within 1000 ms"});
  }
  SECTION("the coordinator") {
    auto outcomes = RunRanks(3, body, quick, {0});
    outcomes.erase(outcomes.begin());
    CheckAllFailWith(outcomes, Code::kUnavailable, {"rank 0, which coordinates", "did not answer"});
  }
}

// A link whose rank goes silent after `sends` messages: a process that dies
// after the agreement, in the middle of the ring.
class DyingLink final : public dist::PointToPoint {
 public:
  DyingLink(dist::PointToPoint& link, int sends) : link_(link), sends_left_(sends) {}
  int rank() const override { return link_.rank(); }
  int num_ranks() const override { return link_.num_ranks(); }
  void Send(int to, const std::string& tag, dist::Bytes bytes) override {
    if (sends_left_-- > 0) link_.Send(to, tag, std::move(bytes));
  }
  dist::Bytes Recv(int from, const std::string& tag, dist::Deadline deadline) override {
    return link_.Recv(from, tag, deadline);
  }

 private:
  dist::PointToPoint& link_;
  int sends_left_;
};

TEST_CASE("a rank dying mid-ring is reported by the others, not waited for", "[collectives]") {
  const int ranks = 3;
  dist::InProcessNetwork network(ranks);
  std::vector<std::optional<Error>> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      DyingLink dying(network.endpoint(r), /*sends=*/1);  // its agreement message only
      dist::PointToPoint& link = r == 2 ? static_cast<dist::PointToPoint&>(dying) : network.endpoint(r);
      Communicator comm(link, {.timeout = std::chrono::milliseconds(1000)});
      Tensor t = RankValues(r, 30);
      try {
        comm.AllReduce("g", t);
      } catch (const Error& e) {
        errors[r] = e;
      }
    });
  for (std::thread& t : threads) t.join();
  // Rank 0 (right of rank 2) waits for its chunk first; rank 1 then starves.
  REQUIRE(errors[0]);
  CHECK(errors[0]->code() == Code::kUnavailable);
  CHECK_THAT(errors[0]->message(), Contains("rank 0 timed out waiting for 'collective/0/reduce/0' from rank 2"));
  REQUIRE(errors[1]);
  CHECK(errors[1]->code() == Code::kUnavailable);
}

TEST_CASE("a communicator refuses collectives after a failure", "[collectives]") {
  auto outcomes = RunRanks(2, [](Communicator& comm) {
    Tensor t = RankValues(comm.rank(), 3);
    try {
      comm.AllReduce(comm.rank() == 0 ? "a" : "b", t);
    } catch (const Error&) {
    }
    comm.AllReduce("a", t);
  });
  CheckAllFailWith(outcomes, Code::kFailedPrecondition, {"refused: the communicator failed earlier"});
}

TEST_CASE("collectives reject bad arguments", "[collectives]") {
  dist::InProcessNetwork network(1);
  CHECK_THROWS_WITH(Communicator(network.endpoint(0), {.timeout = std::chrono::milliseconds(0)}),
                    Contains("timeout must be positive"));
  Communicator comm(network.endpoint(0));
  Tensor ints = Tensor::FromVector<int32_t>({1, 2});
  CHECK_THROWS_WITH(comm.AllReduce("i", ints, ReduceOp::kMean),
                    Contains("the mean needs a float tensor, got int32[2]"));
  Tensor bools = Tensor::Zeros(DType::kBool, Shape{2});
  CHECK_THROWS_WITH(comm.AllReduce("b", bools), Contains("does not support dtype bool"));
  CHECK_THROWS_WITH(network.endpoint(1), Contains("rank 1 is out of range 0..0"));
  CHECK_THROWS_WITH(dist::InProcessNetwork(0), Contains("at least one rank"));
}

}  // namespace
}  // namespace dflow

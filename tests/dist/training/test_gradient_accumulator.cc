// Synchronous aggregation (mean of N, stale gradients dropped, one global
// step, order-independent sums, workers released by the step) and the
// asynchronous staleness log.
#include <catch2/catch.hpp>
#include <thread>

#include "dist/training/gradient_accumulator.h"

namespace dflow {
namespace {

using Catch::Contains;
using dist::SyncGradientAccumulator;

const std::vector<dist::GradientSpec> kVars = {{"w", DType::kFloat32, Shape{2}},
                                               {"b", DType::kFloat64, Shape{}}};

std::vector<Tensor> Grads(float w0, float w1, double b) {
  return {Tensor::FromVector<float>({w0, w1}), Tensor::Scalar<double>(b)};
}

dist::Deadline Soon() { return std::chrono::steady_clock::now() + std::chrono::seconds(20); }
dist::Deadline Past() { return std::chrono::steady_clock::now() - std::chrono::milliseconds(1); }

TEST_CASE("the mean of N pushes advances the global step; stale pushes are dropped", "[ps]") {
  SyncGradientAccumulator acc(kVars, 2);
  CHECK(acc.Push(1, 0, Grads(1, 2, 3)));
  CHECK(acc.Push(0, 0, Grads(3, 4, 5)));
  auto mean = acc.TakeMean(Soon());
  CHECK(mean[0].ToVector<float>() == std::vector<float>{2, 3});
  CHECK(mean[1].scalar<double>() == 4);
  CHECK(acc.global_step() == 0);
  CHECK_FALSE(acc.Push(2, 0, Grads(9, 9, 9)));  // too late for step 0's mean
  acc.FinishStep();
  CHECK(acc.global_step() == 1);
  CHECK_FALSE(acc.Push(2, 0, Grads(100, 100, 100)));  // computed before the update
  CHECK(acc.Push(2, 1, Grads(1, 1, 1)));
  CHECK(acc.Push(0, 1, Grads(3, 3, 3)));
  CHECK(acc.TakeMean(Soon())[0].ToVector<float>() == std::vector<float>{2, 2});
  acc.FinishStep();
  CHECK(acc.stats().accepted == 4);
  CHECK(acc.stats().dropped_stale == 2);
}

TEST_CASE("the mean does not depend on the order the pushes arrive in", "[ps]") {
  // 1e8 + 1 - 1e8 depends on the order of the float additions.
  auto mean_of = [](std::vector<int> arrival) {
    SyncGradientAccumulator acc(kVars, 3);
    const std::vector<float> by_worker = {1e8f, 1.0f, -1e8f};
    for (int w : arrival) acc.Push(w, 0, Grads(by_worker[w], 0, 0));
    return acc.TakeMean(Soon())[0];
  };
  Tensor a = mean_of({0, 1, 2}), b = mean_of({2, 0, 1}), c = mean_of({1, 2, 0});
  CHECK(a.Equals(b));
  CHECK(a.Equals(c));
}

TEST_CASE("workers wait for the chief's update, step after step", "[ps]") {
  const int workers = 3, steps = 5;
  SyncGradientAccumulator acc({{"p", DType::kFloat32, Shape{1}}}, workers);
  float parameter = 1.0f;  // the chief's copy, read by workers between steps
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      for (int64_t step = 0; step < steps; ++step) {
        float p;
        {
          std::lock_guard lock(mu);
          p = parameter;
        }
        acc.Push(w, step, {Tensor::FromVector<float>({p * static_cast<float>(w + 1)})});
        acc.WaitForStepAfter(step, Soon());
      }
    });
  for (int step = 0; step < steps; ++step) {
    float g = acc.TakeMean(Soon())[0].data<float>()[0];
    {
      std::lock_guard lock(mu);
      parameter -= 0.1f * g;
    }
    acc.FinishStep();  // only now may the workers read the parameter again
  }
  for (std::thread& t : threads) t.join();
  // Each step: mean of p*1, p*2, p*3 = 2p, so p <- p - 0.2p.
  float expected = 1.0f;
  for (int step = 0; step < steps; ++step) expected -= 0.1f * ((expected * 1 + expected * 2 + expected * 3) / 3);
  CHECK(parameter == expected);
  CHECK(acc.global_step() == steps);
  CHECK(acc.stats().dropped_stale == 0);
}

TEST_CASE("the accumulator rejects bad pushes and reports who is missing", "[ps]") {
  CHECK_THROWS_WITH(SyncGradientAccumulator(kVars, 0), Contains("replicas_to_aggregate must be at least 1"));
  CHECK_THROWS_WITH(SyncGradientAccumulator({{"i", DType::kInt32, Shape{2}}}, 1),
                    Contains("variable 'i' needs a float32/float64 dtype"));
  SyncGradientAccumulator acc(kVars, 3);
  CHECK_THROWS_WITH(acc.Push(0, 1, Grads(1, 1, 1)),
                    Contains("worker 0 pushed gradients of step 1, but the global step is only 0"));
  CHECK_THROWS_WITH(acc.Push(0, 0, {Tensor::FromVector<float>({1, 2})}),
                    Contains("worker 0 pushed 1 gradients, expected 2"));
  CHECK_THROWS_WITH(acc.Push(1, 0, {Tensor::FromVector<float>({1, 2, 3}), Tensor::Scalar<double>(1)}),
                    Contains("worker 1's gradient for 'w' should be float32[2], got float32[3]"));
  acc.Push(2, 0, Grads(5, 5, 5));
  CHECK(acc.Push(2, 0, Grads(1, 1, 1)));  // a restarted worker's second push replaces its first
  acc.Push(0, 0, Grads(1, 1, 1));
  CHECK_THROWS_WITH(acc.TakeMean(Past()),
                    Contains("step 0 has 2 of 3 gradient sets (from worker(s) 0, 2; none from worker(s) 1) at the deadline"));
  CHECK_THROWS_WITH(acc.WaitForStepAfter(0, Past()), Contains("the global step is still 0"));
  CHECK_THROWS_WITH(acc.FinishStep(), Contains("FinishStep for step 0 before its mean was taken"));
  acc.Push(1, 0, Grads(1, 1, 1));
  CHECK(acc.TakeMean(Soon())[0].data<float>()[0] == 1);  // worker 2's 5s were replaced
  CHECK_THROWS_WITH(acc.TakeMean(Soon()), Contains("the mean of step 0 was already taken"));
}

TEST_CASE("aborting the accumulator wakes its waiters with the reason", "[ps]") {
  SyncGradientAccumulator acc(kVars, 2);
  std::string worker_error, chief_error;
  std::thread worker([&] {
    try {
      acc.WaitForStepAfter(0, Soon());
    } catch (const Error& e) {
      worker_error = e.what();
    }
  });
  std::thread chief([&] {
    try {
      acc.TakeMean(Soon());
    } catch (const Error& e) {
      chief_error = e.what();
    }
  });
  acc.Abort("the chief gave up");
  worker.join();
  chief.join();
  CHECK_THAT(worker_error, Contains("training stopped at global step 0: the chief gave up"));
  CHECK_THAT(chief_error, Contains("the chief gave up"));
  CHECK_THROWS_WITH(acc.Push(0, 0, Grads(1, 1, 1)), Contains("the chief gave up"));
}

TEST_CASE("asynchronous updates record their staleness", "[ps]") {
  dist::StalenessLog log;
  // Workers 0 and 1 both read step 0; 0 updates first, so 1's update is one behind.
  CHECK(log.RecordUpdate(0, 0) == 0);
  CHECK(log.RecordUpdate(1, 0) == 1);
  CHECK(log.RecordUpdate(0, 1) == 1);
  CHECK(log.RecordUpdate(0, 3) == 0);
  CHECK(log.global_step() == 4);
  dist::StalenessStats all = log.stats();
  CHECK(all.updates == 4);
  CHECK(all.max_staleness == 1);
  CHECK(all.mean_staleness == 0.5);
  CHECK(all.histogram == std::map<int64_t, int64_t>{{0, 2}, {1, 2}});
  CHECK(log.stats(1).updates == 1);
  CHECK(log.stats(7).updates == 0);
  CHECK_THROWS_WITH(log.RecordUpdate(2, 9), Contains("worker 2 reports step 9, outside 0..4"));
}

}  // namespace
}  // namespace dflow

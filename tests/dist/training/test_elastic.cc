// Elastic ring training in one process: workers are threads, each with its
// own ring link and rendezvous connection (real ZeroMQ sockets on
// 127.0.0.1), so a worker "dies" by closing both without a word.
#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "dist/training/elastic.h"
#include "dist/transport/zmq_channel.h"

namespace dflow {
namespace {

using Catch::Contains;
using dist::ElasticRingStrategy;
using dist::MembershipChanged;

const std::vector<dist::GradientSpec> kSpecs = {{"g", DType::kFloat32, Shape({4})}};

struct Rendezvous {
  explicit Rendezvous(dist::RendezvousOptions options) : server("127.0.0.1:0", options) {}
  dist::ElasticWorker Worker(const std::string& id, int preferred_rank = -1) const {
    return {.rendezvous = StrCat("127.0.0.1:", server.port()), .id = id, .preferred_rank = preferred_rank};
  }
  dist::RendezvousServer server;
};

// Each of `workers` joins in its own thread; returns them once round 1 formed.
std::vector<std::unique_ptr<ElasticRingStrategy>> JoinAll(const Rendezvous& rendezvous,
                                                          const std::vector<std::string>& ids) {
  std::vector<std::future<std::unique_ptr<ElasticRingStrategy>>> joining;
  for (size_t i = 0; i < ids.size(); ++i)
    joining.push_back(std::async(std::launch::async, [&, i] {
      return std::make_unique<ElasticRingStrategy>(rendezvous.Worker(ids[i], static_cast<int>(i)), kSpecs);
    }));
  std::vector<std::unique_ptr<ElasticRingStrategy>> out;
  for (auto& f : joining) out.push_back(f.get());
  return out;
}

// Runs `body(worker)` on every worker at once; each one's error message.
template <typename Body>
std::vector<std::string> OnEach(const std::vector<ElasticRingStrategy*>& workers, Body body) {
  std::vector<std::string> errors(workers.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < workers.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        body(*workers[i]);
      } catch (const Error& e) {
        errors[i] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

Tensor Filled(float value) {
  Tensor t(DType::kFloat32, Shape({4}));
  for (int i = 0; i < 4; ++i) t.data<float>()[i] = value + static_cast<float>(i);
  return t;
}

// The gradient mean of every worker, each contributing Filled(rank + 1).
std::vector<float> MeanOnEach(const std::vector<ElasticRingStrategy*>& workers) {
  std::vector<float> first(workers.size());
  auto errors = OnEach(workers, [&](ElasticRingStrategy& w) {
    std::vector<Tensor> mean = w.AverageGradients({Filled(static_cast<float>(w.worker() + 1))});
    first[static_cast<size_t>(w.worker())] = mean[0].data<float>()[0];
  });
  for (const std::string& e : errors) CHECK(e.empty());
  return first;
}

std::vector<ElasticRingStrategy*> Pointers(const std::vector<std::unique_ptr<ElasticRingStrategy>>& workers) {
  std::vector<ElasticRingStrategy*> out;
  for (auto& w : workers)
    if (w) out.push_back(w.get());
  return out;
}

TEST_CASE("elastic: the first round has the launcher's order and averages like a ring", "[elastic]") {
  Rendezvous rendezvous({.min_workers = 2, .max_workers = 3, .initial_workers = 3});
  auto workers = JoinAll(rendezvous, {"worker:0", "worker:1", "worker:2"});
  for (int r = 0; r < 3; ++r) {
    CHECK(workers[r]->worker() == r);
    CHECK(workers[r]->num_workers() == 3);
    CHECK(workers[r]->round().number == 1);
  }
  // (1 + 2 + 3) / 3
  CHECK(MeanOnEach(Pointers(workers)) == std::vector<float>{2, 2, 2});
}

TEST_CASE("elastic: a stop vote of any worker reaches all", "[elastic]") {
  Rendezvous rendezvous({.min_workers = 1, .max_workers = 2, .initial_workers = 2});
  auto workers = JoinAll(rendezvous, {"worker:0", "worker:1"});
  std::vector<int> votes(2);
  auto errors = OnEach(Pointers(workers), [&](ElasticRingStrategy& w) { votes[w.worker()] = w.AnyWorker(w.worker() == 1); });
  CHECK(errors == std::vector<std::string>{"", ""});
  CHECK(votes == std::vector<int>{1, 1});
}

TEST_CASE("elastic: the survivors of a dead worker regroup and go on", "[elastic]") {
  Rendezvous rendezvous({.min_workers = 2, .max_workers = 3, .initial_workers = 3});
  auto workers = JoinAll(rendezvous, {"worker:0", "worker:1", "worker:2"});
  workers[1].reset();  // its link and rendezvous connection close without a word
  std::vector<ElasticRingStrategy*> survivors = Pointers(workers);
  auto started = std::chrono::steady_clock::now();
  auto errors = OnEach(survivors, [](ElasticRingStrategy& w) { w.AverageGradients({Filled(1)}); });
  for (const std::string& e : errors) CHECK_THAT(e, Contains("round 1 (3 workers) broke"));
  // Both completed 5 steps; worker:2 reports more and becomes rank 0.
  errors = OnEach(survivors, [](ElasticRingStrategy& w) { w.Regroup(w.round().ids[w.worker()] == "worker:2" ? 6 : 5); });
  CHECK(errors == std::vector<std::string>{"", ""});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(seconds < 15);  // the heartbeat timeout (3 s), not the 60 s start-up one
  CHECK(workers[2]->worker() == 0);
  CHECK(workers[0]->worker() == 1);
  CHECK(workers[0]->round().number == 2);
  CHECK(workers[0]->round().step == 6);
  CHECK_THAT(workers[0]->round().change, Contains("worker:1 left"));
  CHECK(MeanOnEach(survivors) == std::vector<float>{1.5, 1.5});  // (1 + 2) / 2
}

TEST_CASE("elastic: a worker that starts later joins at a step boundary", "[elastic]") {
  Rendezvous rendezvous({.min_workers = 1, .max_workers = 3, .initial_workers = 2});
  auto workers = JoinAll(rendezvous, {"worker:0", "worker:1"});
  // Before anyone waits, the boundary's vote changes nothing.
  auto errors = OnEach(Pointers(workers), [](ElasticRingStrategy& w) { CHECK_FALSE(w.AnyWorker(false)); });
  CHECK(errors == std::vector<std::string>{"", ""});
  auto late = std::async(std::launch::async, [&] {
    return std::make_unique<ElasticRingStrategy>(rendezvous.Worker("late"), kSpecs);
  });
  // The chief learns of it at a boundary; every member leaves the round there.
  bool changed = false;
  for (int boundary = 0; boundary < 100 && !changed; ++boundary) {
    errors = OnEach(Pointers(workers), [](ElasticRingStrategy& w) { w.AnyWorker(false); });
    changed = !errors[0].empty();
    if (changed) CHECK(errors[1] == errors[0]);
    else std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(changed);
  CHECK_THAT(errors[0], Contains("membership changes"));
  errors = OnEach(Pointers(workers), [](ElasticRingStrategy& w) { w.Regroup(10); });
  CHECK(errors == std::vector<std::string>{"", ""});
  workers.push_back(late.get());
  CHECK(workers[2]->worker() == 2);
  CHECK(workers[2]->round().step == 10);
  CHECK(workers[0]->worker() == 0);
  CHECK_THAT(workers[0]->round().change, Contains("late joined"));
  // The joiner takes the chief's values.
  std::vector<float> received(3);
  errors = OnEach(Pointers(workers), [&](ElasticRingStrategy& w) {
    Tensor value = Filled(static_cast<float>(10 * w.worker()));
    w.BroadcastFromChief("v", value);
    received[w.worker()] = value.data<float>()[3];
  });
  CHECK(received == std::vector<float>{3, 3, 3});
  CHECK(MeanOnEach(Pointers(workers)) == std::vector<float>{2, 2, 2});
}

TEST_CASE("elastic: losing workers below --min-workers stops the job with the reason", "[elastic]") {
  Rendezvous rendezvous({.min_workers = 2, .max_workers = 3, .initial_workers = 3});
  auto workers = JoinAll(rendezvous, {"worker:0", "worker:1", "worker:2"});
  workers[1].reset();
  workers[2].reset();
  CHECK_THROWS_AS(workers[0]->AverageGradients({Filled(1)}), MembershipChanged);
  try {
    workers[0]->Regroup(3);
    FAIL("regrouped alone");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kFailedPrecondition);
    CHECK_THAT(e.message(), Contains("worker:1 left; worker:2 left"));
    CHECK_THAT(e.message(), Contains("1 worker(s) left, fewer than --min-workers 2"));
  }
  CHECK(rendezvous.server.failure().has_value());
  // Later joins are refused with the same reason.
  CHECK_THROWS_WITH(ElasticRingStrategy(rendezvous.Worker("late"), kSpecs), Contains("fewer than --min-workers 2"));
}

TEST_CASE("elastic: the rendezvous answers garbage with an error and keeps serving", "[elastic]") {
  Rendezvous rendezvous({.min_workers = 1, .max_workers = 1, .initial_workers = 1});
  dist::Channel channel("rendezvous", StrCat("127.0.0.1:", rendezvous.server.port()));
  for (const char* text : {"not json", "[1]", "{\"op\": \"dance\"}", "{\"op\": \"join\", \"id\": 3}",
                           "{\"op\": \"join\", \"id\": \"x\", \"address\": \"nowhere\", \"step\": 0, "
                           "\"left_round\": 0, \"preferred_rank\": 0}"}) {
    dist::Message m;
    m.type = dist::MessageType::kRendezvous;
    m.text = text;
    CHECK_THROWS_AS(channel.CallAndWait(m), Error);
  }
  ElasticRingStrategy alone(rendezvous.Worker("worker:0"), kSpecs);
  CHECK(alone.num_workers() == 1);
  CHECK(alone.AverageGradients({Filled(5)})[0].data<float>()[0] == 5);
}

TEST_CASE("elastic: the first round waits start_wait for the launcher's workers, then forms with those that came",
          "[elastic]") {
  Rendezvous rendezvous({.min_workers = 1, .max_workers = 3, .initial_workers = 3,
                         .start_wait = std::chrono::milliseconds(500)});
  auto workers = JoinAll(rendezvous, {"worker:0", "worker:1"});
  CHECK(workers[0]->num_workers() == 2);
  Rendezvous strict({.min_workers = 2, .max_workers = 2, .initial_workers = 2,
                     .start_wait = std::chrono::milliseconds(300)});
  CHECK_THROWS_WITH(ElasticRingStrategy(strict.Worker("worker:0"), kSpecs),
                    Contains("only 1 worker(s) joined within 0.3 s, fewer than --min-workers 2"));
}

}  // namespace
}  // namespace dflow

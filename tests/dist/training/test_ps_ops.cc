// The parameter server's graph ops in one session: accumulator pushes, the
// mean, the global step and its waiters, stale pushes dropped and counted,
// a missing worker named at the deadline, and the staleness log.
#include <catch2/catch.hpp>
#include <thread>

#include "graph/session.h"
#include "ops/ops.h"

namespace dflow {
namespace {

using Catch::Contains;

struct AccumulatorGraph {
  Scope s = Scope::NewRootScope();
  Output local_step = ops::Placeholder(s.WithOpName("local_step"), DType::kInt64, Shape());
  Output timeout = ops::Placeholder(s.WithOpName("timeout"), DType::kInt64, Shape());
  Output grad = ops::Placeholder(s.WithOpName("grad"), DType::kFloat32, Shape{2});
  AttrMap attrs = {{"shared_name", std::string("acc")}, {"num_required", int64_t{2}},
                   {"shape", Shape{2}}, {"T", DType::kFloat32}};
  Output Push(int worker) {
    AttrMap a = attrs;
    a["worker"] = int64_t{worker};
    return s.AddOp("GradientAccumulatorPush", {local_step, grad}, a);
  }
  Output take = s.AddOp("GradientAccumulatorTakeMean", {timeout}, attrs);
  Output finish = s.AddOp("GradientAccumulatorFinishStep", {}, attrs);
  Output wait = s.AddOp("GradientAccumulatorWaitForStep", {local_step, timeout}, attrs);
  Node* state = s.AddOp("GradientAccumulatorState", {}, attrs);
};

Tensor Int64(int64_t v) { return Tensor::Scalar<int64_t>(v); }

bool Pushed(Session& session, const Output& push, int64_t step, std::vector<float> grad) {
  return session.Run({{"local_step", Int64(step)}, {"grad", Tensor::FromVector<float>(grad)}}, {push})[0]
      .scalar<bool>();
}

TEST_CASE("accumulator ops: the mean of N pushes, one global step, stale pushes dropped", "[ps]") {
  AccumulatorGraph g;
  Output push0 = g.Push(0), push1 = g.Push(1);
  Session session(g.s, {.num_threads = 1});
  CHECK(Pushed(session, push1, 0, {1, 2}));
  CHECK(Pushed(session, push0, 0, {3, 4}));
  CHECK(session.Run({{"timeout", Int64(1000)}}, {g.take})[0].ToVector<float>() == std::vector<float>{2, 3});
  CHECK(session.Run({g.finish})[0].scalar<int64_t>() == 1);
  CHECK_FALSE(Pushed(session, push1, 0, {9, 9}));  // computed before the update
  auto state = session.Run({Output(g.state, 0), Output(g.state, 1)});
  CHECK(state[0].scalar<int64_t>() == 1);
  CHECK(state[1].scalar<int64_t>() == 1);
  CHECK(session.Run({{"local_step", Int64(0)}, {"timeout", Int64(1000)}}, {g.wait})[0].scalar<int64_t>() == 1);
  CHECK_THROWS_WITH(Pushed(session, push0, 5, {1, 1}), Contains("pushed gradients of step 5, but the global step is only 1"));
}

TEST_CASE("a worker waiting for the next step is released when the chief finishes it", "[ps]") {
  AccumulatorGraph g;
  Output push0 = g.Push(0), push1 = g.Push(1);
  Session session(g.s, {.num_threads = 1});
  int64_t released = -1;
  std::thread worker([&] {
    released = session.Run({{"local_step", Int64(0)}, {"timeout", Int64(20000)}}, {g.wait})[0].scalar<int64_t>();
  });
  Pushed(session, push0, 0, {1, 1});
  Pushed(session, push1, 0, {3, 3});
  session.Run({{"timeout", Int64(1000)}}, {g.take});
  session.Run({g.finish});
  worker.join();
  CHECK(released == 1);
}

TEST_CASE("accumulator ops: a missing worker is named at the deadline; mismatched ops are refused", "[ps]") {
  AccumulatorGraph g;
  Output push0 = g.Push(0);
  AttrMap other = g.attrs;
  other["shape"] = Shape{3};
  Output wrong = g.s.AddOp("GradientAccumulatorFinishStep", {}, other);
  Session session(g.s, {.num_threads = 1});
  Pushed(session, push0, 0, {1, 1});
  CHECK_THROWS_WITH(session.Run({{"timeout", Int64(20)}}, {g.take}),
                    Contains("has 1 of 2 gradient sets (from worker(s) 0; none from worker(s) 1)"));
  CHECK_THROWS_WITH(session.Run({{"local_step", Int64(0)}, {"timeout", Int64(20)}}, {g.wait}),
                    Contains("the global step is still 0"));
  CHECK_THROWS_WITH(session.Run({wrong}), Contains("accumulator 'acc' holds float32[2] gradients of 2 workers, "
                                                   "not float32[3] of 2"));
  CHECK_THROWS_WITH(session.Run({{"timeout", Int64(-1)}}, {g.take}), Contains("timeout_ms must be >= 0, got -1"));
}

TEST_CASE("GradientAccumulatorAbort fails the waiters with its reason", "[ps]") {
  AccumulatorGraph g;
  AttrMap attrs = g.attrs;
  attrs["reason"] = std::string("the chief stopped");
  Node* abort = g.s.AddOp("GradientAccumulatorAbort", {}, attrs);
  Session session(g.s, {.num_threads = 1});
  std::string error;
  std::thread worker([&] {
    try {
      session.Run({{"local_step", Int64(0)}, {"timeout", Int64(20000)}}, {g.wait});
    } catch (const Error& e) {
      error = e.what();
    }
  });
  session.Run({}, {}, {abort});
  worker.join();
  CHECK_THAT(error, Contains("training stopped at global step 0: the chief stopped"));
}

TEST_CASE("the staleness log counts the updates between a worker's read and its update", "[ps]") {
  Scope s = Scope::NewRootScope();
  Output local = ops::Placeholder(s.WithOpName("local"), DType::kInt64, Shape());
  Output read = s.AddOp("StalenessLogGlobalStep", {}, {{"shared_name", std::string("log")}});
  auto record = [&](int worker) {
    return s.AddOp("StalenessLogRecord", {local}, {{"shared_name", std::string("log")}, {"worker", int64_t{worker}}});
  };
  Node* record0 = record(0);
  Node* record1 = record(1);
  Session session(s, {.num_threads = 1});
  int64_t step = session.Run({read})[0].scalar<int64_t>();
  CHECK(step == 0);
  auto first = session.Run({{"local", Int64(step)}}, {Output(record0, 0), Output(record0, 1)});
  CHECK(first[0].scalar<int64_t>() == 0);
  CHECK(first[1].scalar<int64_t>() == 1);
  auto second = session.Run({{"local", Int64(step)}}, {Output(record1, 0), Output(record1, 1)});
  CHECK(second[0].scalar<int64_t>() == 1);  // worker 0's update came in between
  CHECK(second[1].scalar<int64_t>() == 2);
  CHECK_THROWS_WITH(session.Run({{"local", Int64(7)}}, {Output(record0, 0)}), Contains("reports step 7, outside 0..2"));
}

TEST_CASE("IsVariableInitialized says whether the variable was assigned", "[ps]") {
  Scope s = Scope::NewRootScope();
  Output var = ops::Variable(s.WithOpName("v"), Tensor::Scalar<float>(1));
  Output initialized = ops::IsVariableInitialized(s, var);
  Node* init = ops::GlobalVariablesInitializer(s);
  Session session(s, {.num_threads = 1});
  CHECK_FALSE(session.Run({initialized})[0].scalar<bool>());
  session.Run({}, {}, {init});
  CHECK(session.Run({initialized})[0].scalar<bool>());
}

}  // namespace
}  // namespace dflow

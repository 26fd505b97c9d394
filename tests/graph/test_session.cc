// Session: pruning, feeds of intermediate tensors, the executor cache,
// concurrent Runs, errors, the graph passes, tracing and soft placement.
#include <atomic>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using testing::FloatTensor;
using testing::ExpectEqual;
using testing::ExpectError;

namespace {

// The names of the nodes a traced run executed.
std::set<std::string> RanNodes(Session& session, const FeedList& feeds,
                               const std::vector<TensorName>& fetches,
                               std::vector<Tensor>* results = nullptr) {
  RunMetadata metadata;
  std::vector<Tensor> out = session.Run(feeds, fetches, {}, {.trace = true}, &metadata);
  if (results) *results = out;
  std::set<std::string> names;
  for (const NodeExecStats& stats : metadata.step_stats) names.insert(stats.node);
  return names;
}

// A scalar int32 counter variable, its initializer (to `start`) and an
// increment by one.
struct Counter {
  Output var, init, inc;
  Counter(const Scope& s, const std::string& name, int start = 0)
      : var(ops::Variable(s.WithOpName(name), {}, DType::kInt32)),
        init(ops::Assign(s.WithOpName(name + "_init"), var, Tensor::Scalar<int32_t>(start))),
        inc(ops::AssignAdd(s.WithOpName(name + "_inc"), var, Tensor::Scalar<int32_t>(1))) {}
  int32_t Read(Session& session) const { return session.Run({var})[0].scalar<int32_t>(); }
};

}  // namespace

TEST_CASE("a node the fetches do not need never runs", "[core]") {
  Scope s = Scope::NewRootScope();
  Output unfed = ops::Placeholder(s.WithOpName("unfed"), DType::kFloat32, {2});
  Output side = ops::Neg(s.WithOpName("side"), unfed);
  Counter counter(s, "counter");
  Output y = ops::Mul(s.WithOpName("y"), ops::Const(s, FloatTensor({1, 2})), 3.0f);
  Session session(s);
  session.Run({}, {}, {counter.init});
  for (int i = 0; i < 3; ++i) ExpectEqual(session.Run({y})[0], FloatTensor({3, 6}));
  CHECK(counter.Read(session) == 0);  // counter_inc was never run
  session.Run({}, {}, {counter.inc});
  session.Run({}, {}, {"^counter_inc"});
  CHECK(counter.Read(session) == 2);
  // Running `side` needs the placeholder, which then fails.
  ExpectError([&] { session.Run({side}); }, Code::kInvalidArgument, "placeholder 'unfed'");
}

TEST_CASE("feeding an intermediate tensor cuts off what is behind it", "[core]") {
  Scope s = Scope::NewRootScope();
  Output a = ops::Placeholder(s.WithOpName("a"), DType::kFloat32, {2});
  Output b = ops::Add(s.WithOpName("b"), a, 1.0f);
  Output c = ops::Mul(s.WithOpName("c"), b, 2.0f);
  Counter counter(s, "counter", 5);
  Output tripled = ops::Mul(s.WithOpName("tripled"), counter.inc, 3);
  Session session(s);
  session.Run({}, {}, {counter.init});
  // `a` is never needed, so it is not an error that it is not fed.
  ExpectEqual(session.Run({{b, FloatTensor({1, 2})}}, {c})[0], FloatTensor({2, 4}));
  ExpectEqual(session.Run({{"b:0", FloatTensor({-1, 0})}}, {c, b})[1], FloatTensor({-1, 0}));
  ExpectEqual(session.Run({{a, FloatTensor({1, 2})}}, {c})[0], FloatTensor({4, 6}));
  // Feeding the AssignAdd's output means the variable is not touched.
  CHECK(session.Run({{counter.inc, Tensor::Scalar<int32_t>(10)}}, {tripled})[0].scalar<int32_t>() == 30);
  CHECK(counter.Read(session) == 5);
  CHECK(session.Run({tripled})[0].scalar<int32_t>() == 18);
  CHECK(counter.Read(session) == 6);
}

TEST_CASE("executors are cached per signature", "[core]") {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1});
  Output y = ops::Neg(s.WithOpName("y"), x);
  Output z = ops::Mul(s.WithOpName("z"), y, y);
  Session session(s);
  CHECK(session.num_cached_executors() == 0);
  for (int i = 0; i < 3; ++i) session.Run({{x, FloatTensor({1, 2})}}, {y});
  CHECK(session.num_cached_executors() == 1);
  session.Run({{x, FloatTensor({1, 2, 3})}}, {y});  // another shape: same executor
  CHECK(session.num_cached_executors() == 1);
  ExpectEqual(session.Run({{x, FloatTensor({3})}}, {z})[0], FloatTensor({9}));
  CHECK(session.num_cached_executors() == 2);
  session.Run({{x, FloatTensor({3})}}, {z, y});
  session.Run({{y, FloatTensor({3})}}, {z});
  CHECK(session.num_cached_executors() == 4);
  for (int i = 0; i < 3; ++i) session.Run({{y, FloatTensor({3})}}, {z});
  CHECK(session.num_cached_executors() == 4);
  // A signature that fails to build is not cached.
  CHECK_THROWS_AS(session.Run({"nope"}), Error);
  CHECK(session.num_cached_executors() == 4);
}

TEST_CASE("concurrent Runs on one session give the right answers", "[core]") {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {3});
  Output y = ops::Mul(s.WithOpName("y"), ops::Add(s, x, 1.0f), 2.0f);
  Output total = ops::Sum(s.WithOpName("total"), y, 0);
  Counter counter(s, "counter");
  Session session(s);
  session.Run({}, {}, {counter.init});

  constexpr int kThreads = 8, kRuns = 200;
  std::atomic<int> wrong{0}, errors{0}, ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();  // start together: race the cache
      for (int i = 0; i < kRuns; ++i) {
        float v = static_cast<float>(t * 1000 + i);
        try {
          // Half the threads fetch one tensor, half two: two signatures built concurrently.
          std::vector<TensorName> fetches = {y};
          if (t % 2) fetches.push_back(total);
          auto out = session.Run({{x, FloatTensor({v, -v, 0})}}, fetches, {counter.inc});
          auto got = out[0].ToVector<float>();
          if (got != std::vector<float>{2 * (v + 1), 2 * (1 - v), 2}) ++wrong;
          if (t % 2 && out[1].scalar<float>() != 6) ++wrong;
        } catch (const Error&) {
          ++errors;
        }
      }
    });
  for (auto& thread : threads) thread.join();
  CHECK(wrong == 0);
  CHECK(errors == 0);
  CHECK(counter.Read(session) == kThreads * kRuns);  // every AssignAdd landed
  CHECK(session.num_cached_executors() == 4);        // init, two run signatures, the read
}

TEST_CASE("bad feeds, fetches and targets are named in the error", "[core]") {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1, 3});
  Output y = ops::Neg(s.WithOpName("y"), x);
  Session session(s);
  Tensor good = Tensor::Zeros(DType::kFloat32, {2, 3});
  ExpectError([&] { session.Run({"nope"}); }, Code::kNotFound, "fetch 'nope': no node named 'nope'");
  ExpectError([&] { session.Run({"y:1"}); }, Code::kInvalidArgument, "fetch 'y:1'");
  ExpectError([&] { session.Run({"y:one"}); }, Code::kInvalidArgument, "malformed tensor name 'y:one'");
  ExpectError([&] { session.Run({"^y"}); }, Code::kInvalidArgument, "a control reference cannot be a fetch");
  ExpectError([&] { session.Run({{"nope", good}}, {y}); }, Code::kNotFound, "feed 'nope'");
  ExpectError([&] { session.Run({{x, good}}, {y}, {"nope"}); }, Code::kNotFound,
              "target 'nope': no node named 'nope'");
  ExpectError([&] { session.Run({{x, Tensor::Zeros(DType::kInt32, {2, 3})}}, {y}); },
              Code::kInvalidArgument, "feed 'x' expects float32[?,3], got int32[2,3]");
  ExpectError([&] { session.Run({{x, Tensor::Zeros(DType::kFloat32, {2, 4})}}, {y}); },
              Code::kInvalidArgument, "feed 'x' expects shape [?,3], got float32[2,4]");
  ExpectError([&] { session.Run({{x, Tensor::Zeros(DType::kFloat32, {3})}}, {y}); },
              Code::kInvalidArgument, "feed 'x' expects shape [?,3], got float32[3]");
  ExpectError([&] { session.Run({{x, Tensor()}}, {y}); }, Code::kInvalidArgument, "feed 'x' is an empty tensor");
  ExpectError([&] { session.Run({{x, good}, {"x:0", good}}, {y}); }, Code::kInvalidArgument,
              "tensor 'x' is fed twice");
  // None of that broke the session.
  ExpectEqual(session.Run({{x, Tensor::Zeros(DType::kFloat32, {0, 3})}}, {y})[0],
              Tensor::Zeros(DType::kFloat32, {0, 3}));
  CHECK(session.Run({{x, good}}, {y})[0].shape() == Shape({2, 3}));
}

TEST_CASE("the first error cancels the step and the session stays usable", "[core]") {
  Scope s = Scope::NewRootScope();
  Output p = ops::Placeholder(s.WithOpName("p"), DType::kFloat32, {});
  Counter counter(s, "counter");
  // The increment waits for p; when p fails, the increment must not run.
  Output guarded = ops::AssignAdd(s.WithOpName("guarded").WithControlDependencies({p}), counter.var,
                                  Tensor::Scalar<int32_t>(1));
  Session session(s);
  ExpectError([&] { counter.Read(session); }, Code::kFailedPrecondition,
              "variable 'counter' is uninitialised");
  session.Run({}, {}, {counter.init});
  for (int i = 0; i < 3; ++i)
    ExpectError([&] { session.Run({}, {}, {guarded}); }, Code::kInvalidArgument,
                "[[node p (Placeholder) on /device:CPU:0");
  CHECK(counter.Read(session) == 0);
  session.Run({{p, Tensor::Scalar(1.0f)}}, {}, {guarded});
  CHECK(counter.Read(session) == 1);
}

TEST_CASE("an error in one of many parallel branches neither hangs nor crashes", "[core]") {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {16});
  Output bad = ops::Placeholder(s.WithOpName("bad"), DType::kFloat32, {16});
  std::vector<TensorName> fetches;
  for (int i = 0; i < 64; ++i) {
    Output branch = x;
    for (int k = 0; k < 4; ++k) branch = ops::Neg(s, branch);
    fetches.push_back(branch);
  }
  fetches.insert(fetches.begin() + 32, ops::Neg(s.WithOpName("fails"), bad));
  Session session(s, {.num_threads = 4});
  for (int i = 0; i < 20; ++i)
    ExpectError([&] { session.Run({{x, Tensor::Zeros(DType::kFloat32, {16})}}, fetches); },
                Code::kInvalidArgument, "placeholder 'bad'");
  auto out = session.Run({{x, Tensor::Zeros(DType::kFloat32, {16})}, {bad, Tensor::Zeros(DType::kFloat32, {16})}},
                         fetches);
  CHECK(out.size() == 65);
}

TEST_CASE("constant folding, CSE and pruning are observable and can be turned off", "[core]") {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2});
  Output two = ops::Const(s.WithOpName("two"), 2.0f);
  Output three = ops::Const(s.WithOpName("three"), 3.0f);
  Output five = ops::Add(s.WithOpName("five"), two, three);
  Output y = ops::Mul(s.WithOpName("y"), x, five);
  Output n1 = ops::Neg(s.WithOpName("n1"), x);
  Output n2 = ops::Neg(s.WithOpName("n2"), x);
  Output z = ops::Add(s.WithOpName("z"), n1, n2);
  FeedList feeds = {{x, FloatTensor({1, -2})}};
  auto graph = s.graph_ptr();

  auto ran_with = [&](PassOptions passes, std::vector<Tensor>* out) {
    Session session(graph, {.passes = passes});
    return RanNodes(session, feeds, {y, z}, out);
  };
  std::vector<Tensor> out;
  std::set<std::string> all_on = ran_with({}, &out);
  ExpectEqual(out[0], FloatTensor({5, -10}));
  ExpectEqual(out[1], FloatTensor({-2, 4}));
  CHECK(all_on.count("five/folded"));  // Add(two, three) was folded into a Const
  CHECK_FALSE(all_on.count("five"));
  CHECK_FALSE(all_on.count("two"));
  CHECK(all_on.count("n1") + all_on.count("n2") == 1);  // CSE merged the two Negs

  std::set<std::string> no_folding = ran_with({.constant_folding = false}, &out);
  ExpectEqual(out[0], FloatTensor({5, -10}));
  CHECK(no_folding.count("five"));
  CHECK(no_folding.count("two"));
  CHECK_FALSE(no_folding.count("five/folded"));

  std::set<std::string> no_cse = ran_with({.common_subexpression_elimination = false}, &out);
  ExpectEqual(out[1], FloatTensor({-2, 4}));
  CHECK(no_cse.count("n1"));
  CHECK(no_cse.count("n2"));

  // Folding leaves the folded nodes without consumers; pruning removes them.
  std::set<std::string> no_pruning = ran_with({.prune_dead_nodes = false}, &out);
  ExpectEqual(out[0], FloatTensor({5, -10}));
  CHECK(no_pruning.count("five/folded"));
  CHECK(no_pruning.count("five"));
  CHECK(no_pruning.count("two"));

  std::set<std::string> none = ran_with({false, false, false}, &out);
  ExpectEqual(out[0], FloatTensor({5, -10}));
  ExpectEqual(out[1], FloatTensor({-2, 4}));
  CHECK(none.count("n1") + none.count("n2") + none.count("five") == 3);
  // The passes work on the session's copy, never on the user's graph.
  CHECK(graph->FindNode("five"));
  CHECK(graph->FindNode("n2"));
  CHECK_FALSE(graph->FindNode("five/folded"));
}

TEST_CASE("a traced run reports each node, its outputs and the peak memory", "[core]") {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {1000});
  Output y = ops::Exp(s.WithOpName("y"), x);
  Output z = ops::Mul(s.WithOpName("z"), y, x);
  Session session(s);
  RunMetadata metadata;
  auto feeds = FeedList{{x, Tensor::Zeros(DType::kFloat32, {1000})}};
  session.Run(feeds, {z}, {}, {.trace = true}, &metadata);
  CHECK(metadata.peak_bytes >= 4000);
  CHECK(metadata.step_ns > 0);
  std::set<std::string> ops_seen;
  for (const NodeExecStats& stats : metadata.step_stats) {
    INFO(stats.node);
    ops_seen.insert(stats.op);
    CHECK(stats.device == "/device:CPU:0");
    CHECK(stats.start_ns >= 0);
    CHECK(stats.start_ns <= stats.end_ns);
    CHECK(stats.end_ns <= metadata.step_ns);
    if (stats.node == "y" || stats.node == "z") {
      CHECK(stats.outputs == std::vector<std::string>{"float32[1000]"});
      CHECK(stats.output_bytes == 4000);
    }
  }
  CHECK(ops_seen == std::set<std::string>{"_Arg", "Exp", "Mul", "_Retval"});
  CHECK(metadata.step_stats.size() == 4);
  // Without trace, no per-node stats (but still the step's time and peak).
  RunMetadata quiet;
  session.Run(feeds, {z}, {}, {}, &quiet);
  CHECK(quiet.step_stats.empty());
  CHECK(quiet.peak_bytes > 0);
}

TEST_CASE("a node asking for a missing device fails unless soft placement is on", "[core]") {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2});
  Output on_gpu = ops::Neg(s.WithOpName("on_gpu").WithDevice("/device:GPU:0"), x);
  Output legacy = ops::Neg(s.WithOpName("legacy").WithDevice("/cpu:0"), x);
  Output odd = ops::Neg(s.WithOpName("odd").WithDevice("/device:CPU:zero"), x);
  Session strict(s);
  FeedList feeds = {{x, FloatTensor({1, 2})}};
  ExpectError([&] { strict.Run(feeds, {on_gpu}); }, Code::kInvalidArgument,
              "Neg 'on_gpu' requests device '/device:GPU:0' but this session has only /device:CPU:0");
  ExpectEqual(strict.Run(feeds, {legacy})[0], FloatTensor({-1, -2}));
  ExpectError([&] { strict.Run(feeds, {odd}); }, Code::kInvalidArgument, "malformed device name '/device:CPU:zero'");

  Session soft(s, {.allow_soft_placement = true});
  std::vector<Tensor> out;
  std::set<std::string> ran = RanNodes(soft, feeds, {on_gpu}, &out);
  ExpectEqual(out[0], FloatTensor({-1, -2}));
  CHECK(ran.count("on_gpu"));
  RunMetadata metadata;
  soft.Run(feeds, {on_gpu}, {}, {.trace = true}, &metadata);
  for (const NodeExecStats& stats : metadata.step_stats) CHECK(stats.device == "/device:CPU:0");
}

TEST_CASE("in-place variable updates reuse the buffer when only refs use the variable",
          "[session]") {
  Scope s = Scope::NewRootScope();
  auto v = ops::Variable(s.WithOpName("v"), {1000}, DType::kFloat32);
  auto init = ops::Assign(s, v, ops::Fill(s, {1000}, 1.0f));
  auto add = ops::AssignAdd(s.WithOpName("add"), v, ops::Fill(s, {1000}, 2.0f));
  Session session(s);
  // The first update copies: Assign shared the buffer of the (folded) constant.
  session.Run({}, {}, {init});
  session.Run({}, {}, {add});
  auto address = [&] { return session.resources().FindVariable("v")->Read().raw_data(); };
  const void* before = address();
  session.Run({}, {}, {add});  // the variable node's value is not kept for AssignAdd's ref
  CHECK(address() == before);
  // A reader that still holds the old value forces a copy, and keeps its value.
  Tensor held = session.Run({v})[0];
  session.Run({}, {}, {add});
  CHECK(held.flat<float>()[0] == 5.0f);
  CHECK(session.Run({v})[0].flat<float>()[0] == 7.0f);
}

TEST_CASE("CheckSessionDevice says what a Session with that device would", "[session]") {
  CHECK_NOTHROW(CheckSessionDevice(""));
  CHECK_NOTHROW(CheckSessionDevice("/device:CPU:0"));
  ExpectError([] { CheckSessionDevice("/device:TPU:0"); }, Code::kInvalidArgument,
              "'/device:TPU:0' names no device type this build has (CPU, GPU)");
  // No machine has 99 GPUs: the reason is either why there are none or how many there are.
  ExpectError([] { CheckSessionDevice("/device:GPU:99"); }, Code::kUnavailable,
              "no GPU is visible for /device:GPU:99: ");
  Scope s = Scope::NewRootScope();
  ops::Const(s, 1.0f);
  ExpectError([&] { Session session(s, {.devices = {"/device:TPU:0"}}); }, Code::kInvalidArgument,
              "names no device type");
}

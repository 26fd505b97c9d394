// RunOptions::on_fetch_ready: every fetch reported once, with the tensor Run
// returns, while the step is still running; a callback's error fails the step.
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>

#include <catch2/catch.hpp>

#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using testing::FloatTensor;
using testing::ExpectError;

namespace {

// Set by the test's callback, awaited by TestWaitForFetchReport.
struct Gate {
  std::mutex mu;
  std::condition_variable opened_cv;
  bool opened = false;
  void Open() {
    std::lock_guard lock(mu);
    opened = true;
    opened_cv.notify_all();
  }
  // False when the deadline passed first: the test then fails, never hangs.
  bool WaitOpen(std::chrono::seconds deadline) {
    std::unique_lock lock(mu);
    return opened_cv.wait_for(lock, deadline, [&] { return opened; });
  }
};
Gate gate;

REGISTER_OP("TestWaitForFetchReport")
    .output("opened", DType::kBool)
    .stateful()
    .doc("Test only: waits (up to 10 s) until the test's on_fetch_ready opened the gate; "
         "outputs whether it did.");

class WaitForFetchReportKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    ctx.set_output(0, Tensor::Scalar<bool>(gate.WaitOpen(std::chrono::seconds(10))));
  }
};
REGISTER_KERNEL("TestWaitForFetchReport", "CPU", WaitForFetchReportKernel);

}  // namespace

TEST_CASE("on_fetch_ready reports every fetch once, with the tensor Run returns", "[fetch_ready]") {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2});
  Output a = ops::Add(s.WithOpName("a"), x, 1.0f);
  Output b = ops::Mul(s.WithOpName("b"), a, 2.0f);
  Session session(s, {.num_threads = 2});
  std::mutex mu;
  std::map<size_t, std::vector<Tensor>> reported;
  RunOptions options;
  options.on_fetch_ready = [&](size_t index, const Tensor& value) {
    std::lock_guard lock(mu);
    reported[index].push_back(value);
  };
  // A fetch twice and a fed tensor fetched are reported like any other.
  std::vector<TensorName> fetches = {b, a, b, x};
  for (int run = 0; run < 3; ++run) {  // the cached executor reports again
    reported.clear();
    std::vector<Tensor> results = session.Run({{x, FloatTensor({1, 2})}}, fetches, {}, options);
    REQUIRE(reported.size() == fetches.size());
    for (size_t i = 0; i < fetches.size(); ++i) {
      REQUIRE(reported[i].size() == 1);
      CHECK(reported[i][0].raw_data() == results[i].raw_data());  // the same buffer, not a copy
    }
  }
}

TEST_CASE("on_fetch_ready is called before the rest of the step runs", "[fetch_ready]") {
  // `later` runs after `early` (a control edge) and waits until the
  // callback reported `early`: reported only at the end of the step, it
  // would wait out its deadline and output false.
  Scope s = Scope::NewRootScope();
  Output early = ops::Mul(s.WithOpName("early"), ops::Const(s, FloatTensor({1, 2})), 3.0f);
  Node* later = s.WithControlDependencies({early}).WithOpName("later").AddOp("TestWaitForFetchReport", {});
  Session session(s, {.num_threads = 2});
  gate.opened = false;
  RunOptions options;
  options.on_fetch_ready = [](size_t index, const Tensor&) {
    if (index == 0) gate.Open();
  };
  std::vector<Tensor> results = session.Run({}, {early, Output(later, 0)}, {}, options);
  CHECK(results[1].scalar<bool>());
}

TEST_CASE("an error thrown by on_fetch_ready fails the step and names the fetch", "[fetch_ready]") {
  Scope s = Scope::NewRootScope();
  Output a = ops::Add(s.WithOpName("a"), ops::Const(s, FloatTensor({1, 2})), 1.0f);
  Output b = ops::Mul(s.WithOpName("b"), a, 2.0f);
  Session session(s);
  RunOptions options;
  options.on_fetch_ready = [](size_t index, const Tensor&) {
    if (index == 1) Fail(Code::kFailedPrecondition, "the caller refused fetch one");
  };
  ExpectError([&] { session.Run({}, {a, b}, {}, options); }, Code::kFailedPrecondition,
              "on_fetch_ready(1): the caller refused fetch one");
  // The session stays usable.
  CHECK(session.Run({}, {a, b})[1].data<float>()[1] == 6.0f);
}

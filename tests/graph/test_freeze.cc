// FreezeGraph: variables become Consts holding their values at the time of
// the call, the copy keeps only what the outputs need, and outputs that need
// a variable write, unknown outputs and uninitialised variables are errors.
#include <catch2/catch.hpp>

#include "graph/freeze.h"
#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

struct ScaledInput {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2});
  Output w = ops::Variable(s.WithOpName("w"), FloatTensor({1, 2}));
  Output y = ops::Mul(s.WithOpName("y"), x, w);
  Output update = ops::Assign(s.WithOpName("update"), w, FloatTensor({5, 5}));
};

}  // namespace

TEST_CASE("FreezeGraph turns the variables an output reads into Consts", "[freeze]") {
  ScaledInput net;
  Node* init = ops::GlobalVariablesInitializer(net.s);
  Session session(net.s);
  session.Run({}, {}, {init});
  std::shared_ptr<Graph> frozen = FreezeGraph(session, {"y"});
  CHECK(frozen->GetNode("w").op() == "Const");
  CHECK(frozen->GetNode("y").op() == "Mul");
  CHECK(frozen->num_nodes() == 3);  // x, w, y: no initializer, no update
  CHECK_FALSE(frozen->FindNode("update"));
  CHECK(frozen->metadata().empty());

  // A later update reaches the session's variable, not the frozen copy.
  session.Run({}, {}, {net.update});
  Session frozen_session(frozen);
  ExpectEqual(frozen_session.Run({{"x", FloatTensor({1, 1})}}, {"y"})[0], FloatTensor({1, 2}));
  ExpectEqual(session.Run({{net.x, FloatTensor({1, 1})}}, {net.y})[0], FloatTensor({5, 5}));
}

TEST_CASE("FreezeGraph keeps the graph's metadata", "[freeze]") {
  ScaledInput net;
  net.s.graph().set_metadata("model", "scaled input");
  Node* init = ops::GlobalVariablesInitializer(net.s);
  Session session(net.s);
  session.Run({}, {}, {init});
  CHECK(FreezeGraph(session, {"y"})->metadata() == net.s.graph().metadata());
}

TEST_CASE("FreezeGraph rejects variable writes, unknown outputs and unset variables",
          "[freeze]") {
  ScaledInput net;
  ops::Add(net.s.WithOpName("after_update"), net.update, 1.0f);
  Node* init = ops::GlobalVariablesInitializer(net.s);
  Session session(net.s);
  ExpectError([&] { FreezeGraph(session, {"y"}); }, Code::kFailedPrecondition, "uninitialised");
  session.Run({}, {}, {init});
  ExpectError([&] { FreezeGraph(session, {"after_update"}); }, Code::kInvalidArgument,
              "writes variable 'w'");
  ExpectError([&] { FreezeGraph(session, {"nope"}); }, Code::kNotFound, "nope");
}

// A first end-to-end check of the core: variables through a session.
#include <catch2/catch.hpp>

#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;

TEST_CASE("variables keep their value across runs") {
  Scope s = Scope::NewRootScope();
  auto v = ops::Variable(s.WithOpName("v"), {2}, DType::kFloat32);
  auto init = ops::Assign(s.WithOpName("init"), v, Tensor::FromVector<float>({1, 2}));
  auto inc = ops::AssignAdd(s.WithOpName("inc"), v, Tensor::FromVector<float>({10, 20}));
  Session session(s);
  testing::ExpectError([&] { session.Run({v}); }, Code::kFailedPrecondition, "uninitialised");
  session.Run({}, {}, {init});
  session.Run({}, {}, {inc});
  session.Run({}, {}, {inc});
  testing::ExpectEqual(session.Run({v})[0], Tensor::FromVector<float>({21, 42}));
}

TEST_CASE("an unfed placeholder is a clear error") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1, 3});
  Session session(s);
  testing::ExpectError([&] { session.Run({x}); }, Code::kInvalidArgument, "placeholder 'x'");
  auto out = session.Run({{x, Tensor::Zeros(DType::kFloat32, {2, 3})}}, {x});
  CHECK(out[0].shape() == Shape({2, 3}));
  testing::ExpectError([&] { session.Run({{x, Tensor::Zeros(DType::kFloat32, {2, 4})}}, {x}); },
                       Code::kInvalidArgument, "expects shape [?,3]");
}

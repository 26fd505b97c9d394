// A program built out of tree against an installed dflow, the way a user
// builds one: g++ -std=c++20 example.cc $(pkg-config --cflags --libs dflow).
// It builds a small graph (a dense layer with ReLU and a step counter), runs
// it and prints the results, which the install test checks.
#include <iostream>

#include <dflow/graph/session.h>
#include <dflow/ops/ops.h>

int main() {
  using namespace dflow;
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1, 2});
  auto w = ops::Const(s.WithOpName("w"), Tensor::FromVector<float>({1, -1, 2, 0.5f}, {2, 2}));
  auto y = ops::Relu(s.WithOpName("y"), ops::MatMul(s, x, w));
  auto steps = ops::Variable(s.WithOpName("steps"), {}, DType::kInt64);
  auto init = ops::Assign(s.WithOpName("init"), steps, Tensor::Scalar<int64_t>(0));
  auto step = ops::AssignAdd(s.WithOpName("step"), steps, Tensor::Scalar<int64_t>(1));

  Session session(s);
  session.Run({}, {}, {init});
  std::vector<Tensor> out;
  for (int i = 0; i < 3; ++i)
    out = session.Run({{x, Tensor::FromVector<float>({1, 2, -3, 1}, {2, 2})}}, {y, step});
  std::cout << "y = " << out[0].DebugString() << "\n";
  std::cout << "steps = " << out[1].scalar<int64_t>() << "\n";
  try {
    session.Run({{x, Tensor::Zeros(DType::kFloat32, {2, 3})}}, {y});
  } catch (const Error& e) {
    std::cout << "error: " << e.message() << "\n";
  }
  return 0;
}

// `dflow-make-demo DIR`: builds a small classifier graph with the C++ API
// (two dense layers, softmax, argmax), and writes DIR/graph.json and a batch
// of inputs DIR/x.npy for `dflow run`. `./dev demo` runs it end to end.
#include <cstdio>
#include <filesystem>
#include <random>

#include "graph/graph_io.h"
#include "graph/npy.h"
#include "ops/ops.h"

using namespace dflow;

namespace {

// Deterministic weights, so every run of the demo prints the same numbers.
Tensor Weights(Shape shape, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  Tensor t(DType::kFloat32, std::move(shape));
  for (float& v : t.flat<float>()) v = normal(rng);
  return t;
}

Output Dense(const Scope& scope, const Output& x, int64_t in, int64_t out, uint32_t seed) {
  Scope s = scope.NewSubScope("dense");
  auto w = ops::Const(s.WithOpName("kernel"), Weights({in, out}, seed, 0.7f));
  auto b = ops::Const(s.WithOpName("bias"), Weights({out}, seed + 1, 0.1f));
  return ops::Add(s.WithOpName("add"), ops::MatMul(s.WithOpName("matmul"), x, w), b);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: dflow-make-demo DIR\n");
    return 1;
  }
  try {
    std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);

    Scope root = Scope::NewRootScope();
    auto x = ops::Placeholder(root.WithOpName("x"), DType::kFloat32, {-1, 4});
    auto hidden = ops::Relu(root.WithOpName("hidden"), Dense(root, x, 4, 16, 1));
    auto logits = Dense(root, hidden, 16, 3, 2);
    auto probs = ops::Softmax(root.WithOpName("probs"), logits);
    ops::ArgMax(root.WithOpName("class"), probs, 1);

    SaveGraph(root.graph(), (dir / "graph.json").string());
    WriteNpy((dir / "x.npy").string(), Weights({6, 4}, 3, 1.0f));
    std::printf("wrote %s (%d nodes) and %s (float32[6,4])\n", (dir / "graph.json").c_str(),
                root.graph().num_nodes(), (dir / "x.npy").c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "dflow-make-demo: error: %s\n", e.what());
    return 1;
  }
}

// Random ops. Seeds follow TensorFlow: the builder turns (graph seed, op
// seed) into the attrs seed/seed2; both zero means "pick at random".
#include "ops/random.h"

#include <functional>

namespace dflow {
namespace {

void RandomShape(InferenceContext& ctx) { ctx.set_output(0, ctx.input_as_shape(0)); }

void DeclareRandomOp(const char* name, const char* doc) {
  OpRegistrar(
      OpDefBuilder(name)
          .input("shape", "T")
          .output("output", "dtype")
          .type_attr("dtype", {DType::kFloat32, DType::kFloat64})
          .type_attr("T", kIndexTypes)
          .attr<int64_t>("seed", 0)
          .attr<int64_t>("seed2", 0)
          .stateful()
          .shape_fn(RandomShape)
          .doc(doc));
}

[[maybe_unused]] const bool random_ops_registered = [] {
  DeclareRandomOp("RandomUniform",
                  "Uniform values in [0, 1) of the given shape. seed/seed2 select a "
                  "reproducible stream; both 0 picks one at random.");
  DeclareRandomOp("RandomStandardNormal", "Standard normal values of the given shape.");
  DeclareRandomOp("TruncatedNormal",
                  "Standard normal values, with those beyond two standard deviations drawn again.");
  return true;
}();

// TensorFlow's default graph seed, used when only an op seed is given.
constexpr int64_t kDefaultGraphSeed = 87654321;

Output AddRandomOp(const Scope& scope, const char* op, const Input& shape, DType dtype,
                   ops::RandomAttrs attrs) {
  int64_t graph_seed = scope.graph().seed();
  std::string name = scope.NodeName(op);
  int64_t seed = 0, seed2 = 0;
  if (graph_seed != 0 || attrs.seed != 0) {
    seed = graph_seed != 0 ? graph_seed : kDefaultGraphSeed;
    // No op seed: derive a stable one from the node name, so adding other
    // ops to the graph does not change this op's numbers.
    seed2 = attrs.seed != 0 ? attrs.seed
                            : static_cast<int64_t>(std::hash<std::string>{}(name) & 0x7fffffff) + 1;
  }
  // AddOp names the node `name` too: nothing was added to the graph since.
  return scope.AddOp(op, {shape}, {{"dtype", dtype}, {"seed", seed}, {"seed2", seed2}});
}

}  // namespace

namespace ops {

Output RandomUniform(const Scope& scope, const Input& shape, DType dtype, RandomAttrs attrs) {
  return AddRandomOp(scope, "RandomUniform", shape, dtype, attrs);
}
Output RandomStandardNormal(const Scope& scope, const Input& shape, DType dtype, RandomAttrs attrs) {
  return AddRandomOp(scope, "RandomStandardNormal", shape, dtype, attrs);
}
Output TruncatedNormal(const Scope& scope, const Input& shape, DType dtype, RandomAttrs attrs) {
  return AddRandomOp(scope, "TruncatedNormal", shape, dtype, attrs);
}

}  // namespace ops
}  // namespace dflow

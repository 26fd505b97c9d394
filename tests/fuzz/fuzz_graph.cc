// libFuzzer target for the graph file (graph/graph_io.cc, "dflow.graph/1"):
// JSON text becomes a graph or is refused with kInvalidArgument (kNotFound
// for an op that is not registered, kAlreadyExists for a repeated node name). The core ops and the math, array, nn
// and state families are registered, so shape functions run on what parses.
// fuzz-sources: graph/graph_io.cc graph/graph.cc graph/op_def.cc graph/attr.cc graph/attr_json.cc graph/core_ops.cc ops/math.cc ops/array.cc ops/array_shapes.cc ops/nn.cc ops/state.cc ops/random.cc graph/scope.cc graph/kernel.cc graph/resource.cc graph/gpu_absent.cc graph/tensor.cc graph/shape.cc graph/dtype.cc graph/allocator.cc graph/status.cc graph/file.cc graph/json.cc
#include "graph/graph_io.h"
#include "tests/fuzz/fuzz_util.h"

using namespace dflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::ParsesOrRefuses([&] { ParseGraph(fuzz::AsText(data, size), "fuzz.graph.json"); },
                        {Code::kInvalidArgument, Code::kNotFound, Code::kAlreadyExists});
  return 0;
}

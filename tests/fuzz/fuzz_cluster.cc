// libFuzzer target for the cluster document (dist/cluster.cc, the JSON of
// --cluster and DFLOW_CLUSTER): a bad one is refused with kInvalidArgument.
// fuzz-sources: dist/cluster.cc graph/graph_io.cc graph/graph.cc graph/op_def.cc graph/attr.cc graph/attr_json.cc graph/core_ops.cc ops/math.cc ops/array.cc ops/array_shapes.cc ops/nn.cc ops/state.cc ops/random.cc graph/scope.cc graph/kernel.cc graph/resource.cc graph/gpu_absent.cc graph/tensor.cc graph/shape.cc graph/dtype.cc graph/allocator.cc graph/status.cc graph/file.cc graph/json.cc
#include "dist/cluster.h"
#include "tests/fuzz/fuzz_util.h"

using namespace dflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::ParsesOrRefuses([&] { dist::ClusterSpec::Parse(fuzz::AsText(data, size), "fuzz.json"); },
                        {Code::kInvalidArgument});
  return 0;
}

// Which ops have a GPU kernel: the list below names every op that has none,
// so it is the exact account of what is not on the GPU yet (docs/gpu.md).
// It fails both ways: an op that gains a GPU kernel must leave the list, a
// new op without one must join it. Its own program, linking only libdflow,
// so test-only ops do not count. A build without CUDA skips it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <sstream>

#include "dflow_config.h"
#include "graph/kernel.h"
#include "graph/memory_types.h"
#include "graph/op_def.h"

using namespace dflow;

namespace {

// Ops registered by libdflow with no GPU kernel for any dtype.
const std::set<std::string> kNoGpuKernel = {
    "ApplyAdamW", "ApplyCenteredRMSProp", "ArgMax", "ArgMin", "LeakyRelu", "Range", "Rank",
    "SoftmaxCrossEntropyWithLogits", "StridedSlice", "StridedSliceGrad", "UnsortedSegmentSum",
    // the parameter server's state, on its CPU (ops/parameter_server.cc)
    "GradientAccumulatorAbort", "GradientAccumulatorFinishStep", "GradientAccumulatorPush",
    "GradientAccumulatorSetGlobalStep", "GradientAccumulatorState", "GradientAccumulatorTakeMean",
    "GradientAccumulatorWaitForStep",
    "IsVariableInitialized",
    "StalenessLogGlobalStep", "StalenessLogRecord",
    // in-graph data-parallel training, on the worker's CPU (ops/collective.cc)
    "DataParallelAllReduce", "DataParallelBroadcast",
};

// Ops whose GPU kernel is registered for every dtype: those that move,
// describe or fill bytes whatever they mean, and those whose op has one
// dtype only (bool, float boxes, the fused int8 ops). A kernel that computes is registered
// for the dtypes it runs, so that placement sees the others as having no
// GPU kernel (soft placement puts them on the CPU) instead of placing them
// where they fail when they run.
const std::set<std::string> kAnyDTypeOnGpu = {
    "_Arg", "_Retval", "_Send", "_Recv", "_HostToDevice", "_DeviceToHost", "Const", "HostConst", "Placeholder",
    "NoOp", "Identity", "StopGradient", "Reshape", "Squeeze", "ExpandDims", "ZerosLike", "Shape", "Size",
    "ConcatV2", "Split", "LogicalAnd", "LogicalOr", "LogicalNot", "BoxIou", "CombinedNonMaxSuppression",
    // the fused int8 ops: uint8 and int8 in, uint8 or float out, no type attr (ops/cuda/quant.cc)
    "QuantizedAddAndRequantize", "QuantizedAddAndReluAndRequantize", "QuantizedRelu",
    "QuantizedMatMulWithBiasAndRequantize", "QuantizedConv2DWithBiasAndRequantize",
    "QuantizedConv2DWithBiasAndReluAndRequantize", "QuantizedDepthwiseConv2DWithBiasAndRequantize",
    "QuantizedDepthwiseConv2DWithBiasAndReluAndRequantize", "QuantizedConv2DWithBiasAndDequantize",
    "QuantizedConv2DWithBiasAndReluAndDequantize", "QuantizedDepthwiseConv2DWithBiasAndDequantize",
    "QuantizedDepthwiseConv2DWithBiasAndReluAndDequantize",
};

std::string Listing(const std::set<std::string>& names) {
  std::ostringstream text;
  for (const std::string& name : names) text << "  \"" << name << "\",\n";
  return text.str();
}

}  // namespace

TEST_CASE("gpu coverage: exactly the listed ops have no GPU kernel", "[cuda]") {
  if (!DFLOW_WITH_CUDA) {
    WARN("skipped: dflow was built without CUDA");
    return;
  }
  std::set<std::string> without, with;
  for (const OpDef* def : OpRegistry::Global().All())
    (KernelRegistry::Global().Has(def->name, "GPU") ? with : without).insert(def->name);
  std::set<std::string> gained, lost;
  for (const std::string& name : kNoGpuKernel) {
    if (with.count(name)) gained.insert(name);
    if (!with.count(name) && !without.count(name)) lost.insert(name);  // no such op any more
  }
  std::set<std::string> unlisted;
  for (const std::string& name : without)
    if (!kNoGpuKernel.count(name)) unlisted.insert(name);
  INFO("ops with a GPU kernel (" << with.size() << "):\n" << Listing(with));
  INFO("ops without one (" << without.size() << "):\n" << Listing(without));
  INFO("listed but now with a GPU kernel:\n" << Listing(gained));
  INFO("listed but not an op:\n" << Listing(lost));
  INFO("without a GPU kernel and not listed:\n" << Listing(unlisted));
  CHECK(gained.empty());
  CHECK(lost.empty());
  CHECK(unlisted.empty());
}

TEST_CASE("gpu coverage: only kernels that move bytes are registered for every dtype", "[cuda]") {
  if (!DFLOW_WITH_CUDA) {
    WARN("skipped: dflow was built without CUDA");
    return;
  }
  std::set<std::string> any;
  for (const OpDef* def : OpRegistry::Global().All()) {
    std::vector<DType> types = KernelRegistry::Global().RegisteredTypes(def->name, "GPU");
    if (std::find(types.begin(), types.end(), DType::kInvalid) != types.end()) any.insert(def->name);
  }
  INFO("GPU kernels registered for every dtype (" << any.size() << "):\n" << Listing(any));
  CHECK(any == kAnyDTypeOnGpu);
}

// Every declared host-memory arg (ops/cuda/host_memory.cc) names an arg of
// its op, and every op so declared has a GPU kernel to read it.
TEST_CASE("gpu coverage: host-memory declarations name real args of GPU kernels", "[cuda]") {
  if (!DFLOW_WITH_CUDA) {
    WARN("skipped: dflow was built without CUDA");
    return;
  }
  REQUIRE(KernelRegistry::Global().Has("Reshape", "GPU"));  // loads the CUDA module
  std::vector<std::string> errors = HostMemoryDeclarationErrors();
  std::string listing;
  for (const std::string& error : errors) listing += "  " + error + "\n";
  INFO("errors:\n" << listing);
  CHECK(errors.empty());
}

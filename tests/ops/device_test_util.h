// Runs op tests on every available device (the CPU, then each visible GPU)
// and compares each device's outputs with the CPU's, with a normalised error
// threshold per dtype. Without a GPU there is nothing to compare: the
// helpers say so with a Catch2 WARN, so the output shows what was skipped.
#pragma once

#include <string>
#include <vector>

#include "tests/ops/op_test_util.h"

namespace dflow::testing {

// float32 values drawn uniformly from [lo, hi), the same for a seed.
inline Tensor Floats(const Shape& shape, uint64_t seed, double lo = -2, double hi = 2) {
  return RandomTensor(DType::kFloat32, shape, seed, lo, hi);
}

// "/device:CPU:0", then "/device:GPU:N" for each visible GPU.
std::vector<std::string> TestDevices();
bool GpuVisible();
// WARNs "<what> skipped: no GPU visible (<reason>)" and returns true when
// there is no GPU, for tests that only make sense on one.
bool SkipWithoutGpu(const std::string& what);

// CHECKs that every node of `graph` has a GPU kernel for its op and dtype
// (what Session needs; the registry answers without a GPU, from the module).
void CheckGpuKernelsFor(const Graph& graph);

// max |actual - expected| / max(1, max |expected|); NaN where only one side
// has a NaN at some index (both NaN counts as equal). Same dtype and shape required.
double NormalizedError(const Tensor& actual, const Tensor& expected);
// The largest normalised error allowed between devices for a dtype:
// float32 1e-5 (sums reassociate), float64 1e-12, integers and bool 0.
double DeviceTolerance(DType dtype);

// Runs `run` on each device and checks every output against the CPU's.
// Returns how many other devices were compared.
int ExpectSameOnAllDevices(OpRun run);

// The same for a whole graph: per device a Session whose graph runs there;
// each target list of `before` is run in order (variable init, training
// steps), then `fetches` are compared.
int ExpectGraphSameOnAllDevices(const Scope& scope, const FeedList& feeds,
                                const std::vector<TensorName>& fetches,
                                const std::vector<std::vector<TensorName>>& before = {},
                                double tolerance_scale = 1);

}  // namespace dflow::testing

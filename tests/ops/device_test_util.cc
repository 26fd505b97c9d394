#include "tests/ops/device_test_util.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "graph/kernel.h"

namespace dflow::testing {

std::vector<std::string> TestDevices() {
  std::vector<std::string> devices = {"/device:CPU:0"};
  for (int i = 0; i < DiscoverGpus().count; ++i) devices.push_back(StrCat("/device:GPU:", i));
  return devices;
}

bool GpuVisible() { return DiscoverGpus().count > 0; }

bool SkipWithoutGpu(const std::string& what) {
  GpuDiscovery gpus = DiscoverGpus();
  if (gpus.count > 0) return false;
  WARN(what << " skipped: no GPU visible (" << gpus.reason << ")");
  return true;
}

void CheckGpuKernelsFor(const Graph& graph) {
  for (const Node* node : graph.nodes()) {
    INFO(node->Describe() << ", dtype " << DTypeName(KernelDType(*node)));
    CHECK(KernelRegistry::Global().HasFor(*node, "GPU"));
  }
}

double NormalizedError(const Tensor& actual, const Tensor& expected) {
  REQUIRE(actual.dtype() == expected.dtype());
  REQUIRE(actual.shape() == expected.shape());
  double worst = 0, scale = 1;
  for (int64_t i = 0; i < expected.NumElements(); ++i) {
    double a = ReadAsDouble(actual, i), e = ReadAsDouble(expected, i);
    if (std::isnan(a) || std::isnan(e)) {
      if (std::isnan(a) != std::isnan(e)) return std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    if (std::isinf(a) || std::isinf(e)) {
      if (a != e) return std::numeric_limits<double>::infinity();
      continue;
    }
    worst = std::max(worst, std::abs(a - e));
    scale = std::max(scale, std::abs(e));
  }
  return worst / scale;
}

double DeviceTolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 1e-5;
    case DType::kFloat64: return 1e-12;
    case DType::kFloat16: return 1e-3;
    default: return 0;
  }
}

namespace {

void CompareOutputs(const std::vector<Tensor>& got, const std::vector<Tensor>& cpu,
                    const std::string& device, double tolerance_scale) {
  REQUIRE(got.size() == cpu.size());
  for (size_t o = 0; o < got.size(); ++o) {
    double error = NormalizedError(got[o], cpu[o]);
    double tolerance = DeviceTolerance(cpu[o].dtype()) * tolerance_scale;
    INFO("output " << o << " on " << device << ": " << got[o].DebugString() << " vs CPU "
                   << cpu[o].DebugString() << ", normalised error " << error << " (allowed "
                   << tolerance << ")");
    CHECK(error <= tolerance);
  }
}

int CompareOnOtherDevices(const std::function<std::vector<Tensor>(const std::string&)>& run_on,
                          double tolerance_scale) {
  std::vector<std::string> devices = TestDevices();
  std::vector<Tensor> cpu = run_on(devices[0]);
  if (devices.size() == 1) {
    WARN("GPU comparison skipped: no GPU visible (" << DiscoverGpus().reason << ")");
    return 0;
  }
  for (size_t d = 1; d < devices.size(); ++d)
    CompareOutputs(run_on(devices[d]), cpu, devices[d], tolerance_scale);
  return static_cast<int>(devices.size()) - 1;
}

}  // namespace

int ExpectSameOnAllDevices(OpRun run) {
  return CompareOnOtherDevices(
      [&](const std::string& device) {
        run.device = device;
        return RunOp(run);
      },
      1);
}

int ExpectGraphSameOnAllDevices(const Scope& scope, const FeedList& feeds,
                                const std::vector<TensorName>& fetches,
                                const std::vector<std::vector<TensorName>>& before,
                                double tolerance_scale) {
  return CompareOnOtherDevices(
      [&](const std::string& device) {
        SessionOptions options;
        options.devices = {device};
        Session session(scope, options);
        for (const auto& targets : before) session.Run(feeds, {}, targets);
        return session.Run(feeds, fetches);
      },
      tolerance_scale);
}

}  // namespace dflow::testing

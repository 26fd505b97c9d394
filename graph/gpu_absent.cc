// The GPU entry points in a build without CUDA: there is no CUDA module and
// never any GPU, and asking for one says why.
#include "graph/gpu_module.h"
#include "graph/status.h"

namespace dflow {
namespace {

constexpr const char* kNoCuda = "dflow was built without CUDA (meson option cuda, needs nvcc)";

}  // namespace

GpuModuleLoad OpenGpuModule(const std::string& path) { return {nullptr, path, kNoCuda}; }

const GpuModuleLoad& LoadGpuModule() {
  static const GpuModuleLoad absent{nullptr, "", kNoCuda};
  return absent;
}

GpuDiscovery DiscoverGpus() { return {0, kNoCuda}; }

std::unique_ptr<Device> NewGpuDevice(int index, ThreadPool*) {
  Fail(Code::kUnavailable, "no GPU is visible for /device:GPU:", index, ": ", kNoCuda);
}

std::unique_ptr<Device> NewGpuDevice(const std::string& name, ThreadPool*) {
  Fail(Code::kUnavailable, "no GPU is visible for ", name, ": ", kNoCuda);
}

}  // namespace dflow

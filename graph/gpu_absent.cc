// GPU discovery in a build without CUDA: there are never any GPUs, and
// asking for one says why.
#include "graph/device.h"
#include "graph/status.h"

namespace dflow {

GpuDiscovery DiscoverGpus() {
  return {0, "dflow was built without CUDA (meson option cuda, needs nvcc)"};
}

std::unique_ptr<Device> NewGpuDevice(int index, ThreadPool*) {
  Fail(Code::kUnavailable, "no GPU is visible for /device:GPU:", index, ": ", DiscoverGpus().reason);
}

}  // namespace dflow

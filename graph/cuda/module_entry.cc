// The CUDA module's entry point (graph/gpu_module.h): what libdflow calls
// after dlopen. The kernels of ops/cuda/ registered themselves already.
#include "graph/cuda/cuda_device.h"
#include "graph/gpu_module.h"

extern "C" const dflow::GpuModuleApi* dflow_gpu_module_api() {
  static const dflow::GpuModuleApi api{dflow::kGpuModuleAbiVersion, &dflow::DiscoverCudaGpus,
                                       &dflow::NewCudaDevice};
  return &api;
}

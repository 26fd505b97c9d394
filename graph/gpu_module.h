// The CUDA module: in a CUDA build the GPU device and kernels live in
// libdflow_cuda.so, which libdflow dlopens the first time something asks for
// a GPU (DiscoverGpus, NewGpuDevice, or the KernelRegistry about "GPU"), so
// a process that never does so never maps cudart and cuBLAS (~200 MB RSS).
#pragma once

#include <memory>
#include <string>

#include "graph/device.h"

namespace dflow {

// What the module hands libdflow. Its kernels need no entry here: they
// register with libdflow's KernelRegistry from static initializers while
// dlopen runs.
struct GpuModuleApi {
  int abi_version;  // kGpuModuleAbiVersion of the headers the module was built with
  GpuDiscovery (*discover_gpus)();
  // The GPU of CUDA ordinal `index`, called `name`.
  std::unique_ptr<Device> (*new_gpu_device)(const std::string& name, int index, ThreadPool* pool);
};
inline constexpr int kGpuModuleAbiVersion = 2;
// The module's one entry point: extern "C" const GpuModuleApi* dflow_gpu_module_api().
inline constexpr const char* kGpuModuleEntryPoint = "dflow_gpu_module_api";
inline constexpr const char* kGpuModuleFileName = "libdflow_cuda.so";

struct GpuModuleLoad {
  const GpuModuleApi* api = nullptr;  // null when the module could not be loaded
  std::string path;                   // what was opened, or last tried
  std::string reason;                 // why it could not be loaded (names the path, gives dlerror)
};

// Loads the module once per process and returns that first result ever
// after; thread-safe. Where: $DFLOW_CUDA_MODULE when set (nothing else is
// tried), else libdflow_cuda.so in the directory of libdflow.so itself, else
// by file name through the library search path. A build without CUDA has no
// module: the reason says so. Called from within the module's own static
// initializers it returns "in progress" at once instead of waiting on itself.
const GpuModuleLoad& LoadGpuModule();

// One uncached attempt to open the module at `path` and check its entry
// point and ABI version (the loader's step, exposed for tests). A module is
// never unloaded: its kernels stay registered.
GpuModuleLoad OpenGpuModule(const std::string& path);

}  // namespace dflow

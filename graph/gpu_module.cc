// libdflow's side of the CUDA module (graph/gpu_module.h) in a CUDA build:
// finding and opening libdflow_cuda.so once, and the GPU entry points of
// graph/device.h, which forward to it.
#include "graph/gpu_module.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "graph/status.h"

namespace dflow {
namespace {

// The directory libdflow.so was loaded from ("" when dladdr cannot tell).
std::string LibdflowDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&LoadGpuModule), &info) == 0 || !info.dli_fname) return "";
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

GpuModuleLoad FindAndOpenGpuModule() {
  const char* chosen = std::getenv("DFLOW_CUDA_MODULE");
  if (chosen && *chosen) return OpenGpuModule(chosen);
  std::string directory = LibdflowDirectory();
  if (!directory.empty()) {
    std::string beside = directory + "/" + kGpuModuleFileName;
    if (std::filesystem::exists(beside)) return OpenGpuModule(beside);
  }
  GpuModuleLoad by_name = OpenGpuModule(kGpuModuleFileName);
  if (!by_name.api)
    by_name.reason = StrCat(kGpuModuleFileName, " is not beside libdflow.so (in '", directory,
                            "') and the library search path has none: ", by_name.reason);
  return by_name;
}

// Marks the thread that runs the load, for the module's own initializers.
thread_local bool loading_on_this_thread = false;

}  // namespace

GpuModuleLoad OpenGpuModule(const std::string& path) {
  GpuModuleLoad load;
  load.path = path;
  // RTLD_NODELETE: registered kernels point into the module, so it stays.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) {
    load.reason = StrCat("cannot load the CUDA module '", path, "': ", dlerror());
    return load;
  }
  dlerror();  // clear, so that a null from dlsym is told apart below
  using Entry = const GpuModuleApi* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kGpuModuleEntryPoint));
  if (!entry) {
    const char* error = dlerror();
    load.reason = StrCat("'", path, "' is not a dflow CUDA module: ",
                         error ? std::string(error) : StrCat(kGpuModuleEntryPoint, " is null"));
    return load;
  }
  const GpuModuleApi* api = entry();
  if (!api || api->abi_version != kGpuModuleAbiVersion) {
    load.reason = StrCat("the CUDA module '", path, "' was built for module ABI version ",
                         api ? api->abi_version : -1, ", this libdflow needs ", kGpuModuleAbiVersion,
                         ": rebuild them together");
    return load;
  }
  load.api = api;
  return load;
}

const GpuModuleLoad& LoadGpuModule() {
  static const GpuModuleLoad in_progress{nullptr, "", "the CUDA module is being loaded"};
  if (loading_on_this_thread) return in_progress;
  static std::once_flag once;
  static const GpuModuleLoad* loaded = nullptr;
  // No lock of ours is held across dlopen: the module's initializers take
  // the KernelRegistry's lock to register, and other threads wait here.
  std::call_once(once, [] {
    struct Marker {
      Marker() { loading_on_this_thread = true; }
      ~Marker() { loading_on_this_thread = false; }
    } marker;
    loaded = new GpuModuleLoad(FindAndOpenGpuModule());  // kept for the process's life
  });
  return *loaded;
}

GpuDiscovery DiscoverGpus() {
  const GpuModuleLoad& module = LoadGpuModule();
  if (!module.api) return {0, module.reason};
  return module.api->discover_gpus();
}

std::unique_ptr<Device> NewGpuDevice(int index, ThreadPool* pool) {
  return NewGpuDevice(StrCat("/device:GPU:", index), pool);
}

std::unique_ptr<Device> NewGpuDevice(const std::string& name, ThreadPool* pool) {
  DeviceName parsed = DeviceName::Parse(name);
  if (parsed.type != "GPU" || !parsed.index)
    Fail(Code::kInvalidArgument, "'", name, "' is not a GPU device name (e.g. /device:GPU:0)");
  const GpuModuleLoad& module = LoadGpuModule();
  if (!module.api) Fail(Code::kUnavailable, "no GPU is visible for ", name, ": ", module.reason);
  return module.api->new_gpu_device(name, *parsed.index, pool);
}

}  // namespace dflow

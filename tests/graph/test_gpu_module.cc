// The CUDA module loader (graph/gpu_module.h), testable without a GPU: what
// DiscoverGpus and a GPU session say when no GPU is visible, which kernels
// the registry offers, and the errors for a module path that is missing, not
// a shared library, or not a dflow module. Cases that need a CUDA build (or
// need no GPU) say so with a WARN and return. The hidden-tag cases run in
// their own processes (tests/meson.build): one with $DFLOW_CUDA_MODULE
// pointing at a missing file, one checking that a CPU-only run never maps
// cudart, one loading the module from several threads at once.
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "dflow_config.h"
#include "graph/gpu_module.h"
#include "graph/kernel.h"
#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using testing::ExpectError;

namespace {

constexpr bool kBuiltWithCuda = DFLOW_WITH_CUDA;

bool HasText(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A session on /device:GPU:0 with one Const in its graph.
void OpenGpuSession() {
  Scope s = Scope::NewRootScope();
  ops::Const(s, 1.0f);
  SessionOptions options;
  options.devices = {"/device:GPU:0"};
  Session session(s, options);
}

// The file libdflow.so was loaded from.
std::string LibdflowPath() {
  Dl_info info{};
  REQUIRE(dladdr(reinterpret_cast<void*>(&LoadGpuModule), &info) != 0);
  return info.dli_fname;
}

std::string ProcessMaps() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("gpu module: without a GPU, DiscoverGpus gives no device and the reason", "[gpu_module]") {
  GpuDiscovery gpus = DiscoverGpus();
  if (gpus.count > 0) {
    WARN("skipped: " << gpus.count << " GPU(s) visible");
    return;
  }
  INFO("reason: " << gpus.reason);
  if (!kBuiltWithCuda) {
    CHECK(HasText(gpus.reason, "built without CUDA"));
    return;
  }
  // The module was built beside libdflow.so and loads; the CUDA runtime says why there is no GPU.
  const GpuModuleLoad& module = LoadGpuModule();
  INFO("module: " << module.path << " " << module.reason);
  REQUIRE(module.api != nullptr);
  if (!std::getenv("DFLOW_CUDA_MODULE"))
    CHECK(module.path ==
          (std::filesystem::path(LibdflowPath()).parent_path() / kGpuModuleFileName).string());
  CHECK((HasText(gpus.reason, "cudaGetDeviceCount failed: cudaError") ||
         HasText(gpus.reason, "the CUDA runtime sees no device")));
}

TEST_CASE("gpu module: a GPU session without a GPU fails with kUnavailable and the reason",
          "[gpu_module]") {
  GpuDiscovery gpus = DiscoverGpus();
  if (gpus.count > 0) {
    WARN("skipped: a GPU is visible");
    return;
  }
  REQUIRE_FALSE(gpus.reason.empty());
  ExpectError(OpenGpuSession, Code::kUnavailable, "no GPU is visible for /device:GPU:0: " + gpus.reason);
}

TEST_CASE("gpu module: the registry offers GPU kernels exactly in a CUDA build", "[gpu_module]") {
  const KernelRegistry& registry = KernelRegistry::Global();
  CHECK(registry.Has("MatMul", "GPU") == kBuiltWithCuda);
  std::vector<std::string> types = registry.DeviceTypesWithKernels("MatMul");
  CHECK(types == (kBuiltWithCuda ? std::vector<std::string>{"CPU", "GPU"} : std::vector<std::string>{"CPU"}));
  CHECK(registry.Has("MatMul", "CPU"));
}

TEST_CASE("gpu module: a missing module file is named with dlerror's reason", "[gpu_module]") {
  if (!kBuiltWithCuda) {
    WARN("skipped: dflow was built without CUDA, so there is no module to load");
    return;
  }
  std::string path = "/nonexistent/dflow/libdflow_cuda.so";
  GpuModuleLoad load = OpenGpuModule(path);
  CHECK(load.api == nullptr);
  CHECK(load.path == path);
  CHECK(load.reason == "cannot load the CUDA module '" + path + "': " + path +
                           ": cannot open shared object file: No such file or directory");
}

TEST_CASE("gpu module: a file that is not a shared library is rejected with dlerror's reason",
          "[gpu_module]") {
  if (!kBuiltWithCuda) {
    WARN("skipped: dflow was built without CUDA, so there is no module to load");
    return;
  }
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("dflow_garbage_module_" + std::to_string(getpid()) + ".so");
  {
    std::ofstream garbage(path);
    for (int i = 0; i < 200; ++i) garbage << "this is not an ELF file\n";
  }
  GpuModuleLoad load = OpenGpuModule(path.string());
  std::filesystem::remove(path);
  CHECK(load.api == nullptr);
  INFO(load.reason);
  CHECK(HasText(load.reason, "cannot load the CUDA module '" + path.string() + "': "));
  CHECK(HasText(load.reason, "invalid ELF header"));
}

TEST_CASE("gpu module: a shared library without the entry point is not a dflow module",
          "[gpu_module]") {
  if (!kBuiltWithCuda) {
    WARN("skipped: dflow was built without CUDA, so there is no module to load");
    return;
  }
  // libdflow.so itself: a real shared library (already loaded, so opening it runs nothing).
  std::string path = LibdflowPath();
  GpuModuleLoad load = OpenGpuModule(path);
  CHECK(load.api == nullptr);
  INFO(load.reason);
  CHECK(HasText(load.reason, "'" + path + "' is not a dflow CUDA module: "));
  CHECK(HasText(load.reason, kGpuModuleEntryPoint));
}

// Run by tests/meson.build with DFLOW_CUDA_MODULE=/nonexistent/libdflow_cuda_override.so.
TEST_CASE("gpu module: $DFLOW_CUDA_MODULE picks the module, and a bad one is named",
          "[.gpu_module_override]") {
  const char* chosen = std::getenv("DFLOW_CUDA_MODULE");
  REQUIRE(chosen != nullptr);
  GpuDiscovery gpus = DiscoverGpus();
  CHECK(gpus.count == 0);
  INFO("reason: " << gpus.reason);
  if (!kBuiltWithCuda) {
    CHECK(HasText(gpus.reason, "built without CUDA"));
    return;
  }
  CHECK(LoadGpuModule().path == chosen);
  CHECK(HasText(gpus.reason, StrCat("cannot load the CUDA module '", chosen, "': ", chosen,
                                     ": cannot open shared object file")));
  ExpectError(OpenGpuSession, Code::kUnavailable, StrCat("no GPU is visible for /device:GPU:0: ", gpus.reason));
  // Without the module there are no GPU kernels, so placement never picks a GPU.
  CHECK_FALSE(KernelRegistry::Global().Has("MatMul", "GPU"));
}

// Run by tests/meson.build in a process of its own: nothing before it asked for a GPU.
TEST_CASE("gpu module: a process that never asks for a GPU never maps cudart",
          "[.gpu_module_cpu_only]") {
  Scope s = Scope::NewRootScope();
  Output x = ops::Const(s, Tensor::FromVector<float>({1, 2, 3, 4}).Reshaped(Shape{2, 2}));
  Output y = ops::MatMul(s, x, x);
  Session session(s);
  testing::ExpectEqual(session.Run({y})[0],
                       Tensor::FromVector<float>({7, 10, 15, 22}).Reshaped(Shape{2, 2}));
  std::string maps = ProcessMaps();
  CHECK_FALSE(HasText(maps, kGpuModuleFileName));
  CHECK_FALSE(HasText(maps, "libcudart"));
  CHECK_FALSE(HasText(maps, "libcublas"));
  // The check above can fail: asking for a GPU maps the module in a CUDA build.
  DiscoverGpus();
  CHECK(HasText(ProcessMaps(), kGpuModuleFileName) == kBuiltWithCuda);
}

// Run by tests/meson.build in a process of its own, so that the threads race
// for the first load: each asks about GPU kernels (which loads the module and
// registers its kernels) while the others look up CPU kernels.
TEST_CASE("gpu module: threads asking at once all see one load and the same kernels",
          "[.gpu_module_threads]") {
  constexpr int kThreads = 8;
  std::atomic<int> ready{0}, with_gpu_matmul{0}, cpu_lookups{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      const KernelRegistry& registry = KernelRegistry::Global();
      if (t % 2 == 0) {
        with_gpu_matmul += registry.Has("MatMul", "GPU");
        DiscoverGpus();
      } else {
        for (int i = 0; i < 200; ++i) cpu_lookups += registry.Has("Add", "CPU");
        with_gpu_matmul += registry.Has("MatMul", "GPU");
      }
    });
  for (std::thread& thread : threads) thread.join();
  CHECK(cpu_lookups == 200 * kThreads / 2);
  CHECK(with_gpu_matmul == (kBuiltWithCuda ? kThreads : 0));
  if (kBuiltWithCuda) CHECK(LoadGpuModule().api != nullptr);
}

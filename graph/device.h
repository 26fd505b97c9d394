// Devices: where kernels run and tensors live. A Device names itself
// ("/device:CPU:0"), owns an allocator and offers a thread pool for intra-op
// parallelism. DeviceName parses TensorFlow-style device strings.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "graph/allocator.h"
#include "graph/thread_pool.h"

namespace dflow {

// A parsed, possibly partial, device string:
// "/job:worker/replica:0/task:1/device:CPU:0", "/device:CPU:0", "/cpu:0", "CPU:0".
struct DeviceName {
  std::string job;                // empty: any
  std::optional<int> replica;
  std::optional<int> task;
  std::string type;               // "CPU", "GPU"; empty: any
  std::optional<int> index;

  static DeviceName Parse(std::string_view text);  // throws on malformed text
  std::string ToString() const;
  // Does a full device name satisfy this (partial) request?
  bool Matches(const DeviceName& full) const;
};

class Device {
 public:
  Device(std::string name, std::string type) : name_(std::move(name)), type_(std::move(type)) {}
  virtual ~Device() = default;

  const std::string& name() const { return name_; }  // "/device:CPU:0"
  const std::string& type() const { return type_; }  // "CPU"
  virtual Allocator* allocator() = 0;
  // Where a kernel's outputs declared in host memory go (graph/memory_types.h).
  virtual Allocator* host_allocator() { return CpuAllocator(); }
  virtual ThreadPool* compute_pool() = 0;

 private:
  std::string name_;
  std::string type_;
};

// The host CPU as a device; kernels split work over `pool`.
std::unique_ptr<Device> NewCpuDevice(int index, ThreadPool* pool);
// The same under a full name ("/job:localhost/replica:0/task:0/device:CPU:1"),
// for a session with several CPU devices.
std::unique_ptr<Device> NewCpuDevice(std::string name, ThreadPool* pool);

// The GPUs this process can use: how many, and when none, why not ("built
// without CUDA", "no CUDA-capable device is detected", a driver error).
struct GpuDiscovery {
  int count = 0;
  std::string reason;
};
GpuDiscovery DiscoverGpus();
// "/device:GPU:<index>"; throws kUnavailable naming the reason when that GPU
// is not visible. Kernels split host-side work over `pool`.
std::unique_ptr<Device> NewGpuDevice(int index, ThreadPool* pool);
// The same under a full name ("/job:localhost/replica:0/task:0/device:GPU:1"),
// for a session or a task with several devices; the index is the name's.
std::unique_ptr<Device> NewGpuDevice(const std::string& name, ThreadPool* pool);

}  // namespace dflow

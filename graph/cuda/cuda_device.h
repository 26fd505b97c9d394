// CudaDevice: one visible GPU behind the Device interface ("/device:GPU:N").
// Kernels enqueue work on the device's stream and return; the stream keeps
// them in order, so a tensor freed on the host can be handed to the next
// kernel at once (both run in stream order). Host -> device copies go
// through a ring of pinned staging buffers and return once the copy is
// enqueued; device -> host copies go through one pinned buffer and wait for
// the stream (the caller reads the bytes).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <string_view>

#include "graph/caching_allocator.h"
#include "graph/device.h"
#include "graph/tensor.h"

namespace dflow {

class CudaDevice final : public Device {
 public:
  // The GPU of CUDA ordinal `ordinal`, called `name` ("/device:GPU:0", or a
  // full name in a session or task with several devices).
  CudaDevice(std::string device_name, int ordinal, ThreadPool* pool);
  ~CudaDevice() override;

  Allocator* allocator() override { return allocator_.get(); }
  ThreadPool* compute_pool() override { return pool_; }
  CachingAllocator& caching_allocator() { return *allocator_; }

  int ordinal() const { return ordinal_; }
  // Makes this GPU current on the calling thread (executor threads vary)
  // and returns its stream.
  cudaStream_t Activate(std::string_view context) const;
  // Runs fn(handle) with the cuBLAS handle bound to the stream, one caller at a time.
  template <typename Fn>
  void WithCublas(std::string_view context, Fn&& fn) {
    Activate(context);
    std::lock_guard<std::mutex> lock(cublas_mu_);
    fn(cublas_);
  }

  // A new tensor in this GPU's memory holding `host`'s bytes. Returns once
  // the copy is enqueued: kernels read the tensor in stream order, and the
  // host tensor may be freed at once (its bytes are in a staging buffer).
  Tensor CopyToDevice(const Tensor& host, std::string_view context);
  // A new host tensor holding `on_device`'s bytes; waits for the stream.
  Tensor CopyToHost(const Tensor& on_device, std::string_view context);
  // Waits for everything enqueued so far.
  void Synchronize(std::string_view context) const;

 private:
  // Pinned host memory that one copy reads or writes; `done` is recorded on
  // the stream after an upload from it, so the next use waits for that
  // copy alone, not for the whole stream.
  struct Staging {
    void* data = nullptr;
    size_t bytes = 0;
    cudaEvent_t done = nullptr;
  };
  static constexpr int kUploadSlots = 4;

  // `staging`'s memory, at least `bytes`, grown on demand; its mutex held.
  static void* Reserve(Staging& staging, size_t bytes, std::string_view context);

  int ordinal_;
  ThreadPool* pool_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::mutex cublas_mu_;
  std::unique_ptr<CachingAllocator> allocator_;
  std::mutex upload_mu_;  // guards uploads_ and next_upload_
  Staging uploads_[kUploadSlots];
  int next_upload_ = 0;
  std::mutex download_mu_;  // guards download_
  Staging download_;
};

// The module's versions of DiscoverGpus and NewGpuDevice (graph/device.h),
// which libdflow reaches through graph/gpu_module.h.
GpuDiscovery DiscoverCudaGpus();
std::unique_ptr<Device> NewCudaDevice(const std::string& name, int index, ThreadPool* pool);

// The CudaDevice behind a kernel's context; throws kInternal for another device.
CudaDevice& AsCudaDevice(Device& device);

}  // namespace dflow

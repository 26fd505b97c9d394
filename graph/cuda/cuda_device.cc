#include "graph/cuda/cuda_device.h"

#include <algorithm>
#include <cstring>

#include "graph/cuda/cuda_check.h"
#include "graph/status.h"

namespace dflow {
namespace {

// cudaMalloc/cudaFree for one GPU; the caching allocator above it keeps
// these calls out of the steady state.
class CudaMemory final : public BackingAllocator {
 public:
  CudaMemory(int ordinal, cudaStream_t stream) : ordinal_(ordinal), stream_(stream) {}
  std::string name() const override { return StrCat("gpu", ordinal_); }
  bool host_accessible() const override { return false; }

  void* Allocate(size_t bytes) override {
    DFLOW_CUDA(cudaSetDevice(ordinal_), name());
    void* ptr = nullptr;
    cudaError_t status = cudaMalloc(&ptr, bytes);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    DFLOW_CUDA(status, StrCat(name(), " allocating ", bytes, " bytes"));
    return ptr;
  }

  // cudaFree waits for the device, so no kernel still reads the block.
  void Free(void* ptr) override {
    cudaSetDevice(ordinal_);
    cudaFree(ptr);  // errors here (a dead context at exit) leave nothing to recover
  }

  void Copy(void* dst, const void* src, size_t bytes) override {
    DFLOW_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_),
               StrCat(name(), " copying ", bytes, " bytes"));
  }

 private:
  int ordinal_;
  cudaStream_t stream_;
};

}  // namespace

GpuDiscovery DiscoverCudaGpus() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return {0, StrCat("cudaGetDeviceCount failed: ", cudaGetErrorName(status), " (",
                      cudaGetErrorString(status), ")")};
  }
  if (count == 0) return {0, "the CUDA runtime sees no device"};
  return {count, ""};
}

std::unique_ptr<Device> NewCudaDevice(const std::string& name, int index, ThreadPool* pool) {
  GpuDiscovery gpus = DiscoverCudaGpus();
  if (index < 0 || index >= gpus.count)
    Fail(Code::kUnavailable, "no GPU is visible for ", name, ": ",
         gpus.count == 0 ? gpus.reason : StrCat("only ", gpus.count, " GPU(s) are visible"));
  return std::make_unique<CudaDevice>(name, index, pool);
}

CudaDevice::CudaDevice(std::string device_name, int ordinal, ThreadPool* pool)
    : Device(std::move(device_name), "GPU"), ordinal_(ordinal), pool_(pool) {
  const std::string& context = name();
  DFLOW_CUDA(cudaSetDevice(ordinal_), context);
  DFLOW_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), context);
  DFLOW_CUDA(cublasCreate(&cublas_), context);
  DFLOW_CUDA(cublasSetStream(cublas_, stream_), context);
  allocator_ = std::make_unique<CachingAllocator>(std::make_unique<CudaMemory>(ordinal_, stream_));
  for (Staging& slot : uploads_) DFLOW_CUDA(cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming), context);
}

CudaDevice::~CudaDevice() {
  cudaSetDevice(ordinal_);
  cudaStreamSynchronize(stream_);
  allocator_.reset();
  if (cublas_) cublasDestroy(cublas_);
  for (Staging& slot : uploads_) {
    if (slot.done) cudaEventDestroy(slot.done);
    if (slot.data) cudaFreeHost(slot.data);
  }
  if (download_.data) cudaFreeHost(download_.data);
  if (stream_) cudaStreamDestroy(stream_);
}

cudaStream_t CudaDevice::Activate(std::string_view context) const {
  DFLOW_CUDA(cudaSetDevice(ordinal_), context);
  return stream_;
}

void CudaDevice::Synchronize(std::string_view context) const {
  Activate(context);
  DFLOW_CUDA(cudaStreamSynchronize(stream_), context);
}

void* CudaDevice::Reserve(Staging& staging, size_t bytes, std::string_view context) {
  if (bytes <= staging.bytes) return staging.data;
  if (staging.data) DFLOW_CUDA(cudaFreeHost(staging.data), context);
  staging.data = nullptr;
  staging.bytes = 0;
  size_t grown = std::max(bytes, size_t{1} << 20);
  DFLOW_CUDA(cudaHostAlloc(&staging.data, grown, cudaHostAllocDefault), context);
  staging.bytes = grown;
  return staging.data;
}

// host bytes -> pinned staging -> device, with no wait for the stream: the
// slots take turns, and a slot is reused once its own last copy is done
// (cudaEventSynchronize on its event, normally long complete by then).
Tensor CudaDevice::CopyToDevice(const Tensor& host, std::string_view context) {
  if (host.allocator() && !host.allocator()->host_accessible())
    Fail(Code::kInternal, context, ": CopyToDevice got a tensor that is not in host memory");
  Tensor out(host.dtype(), host.shape(), allocator());
  size_t bytes = host.TotalBytes();
  if (bytes == 0) return out;
  cudaStream_t stream = Activate(context);
  std::lock_guard<std::mutex> lock(upload_mu_);
  Staging& slot = uploads_[next_upload_];
  next_upload_ = (next_upload_ + 1) % kUploadSlots;
  DFLOW_CUDA(cudaEventSynchronize(slot.done), context);
  void* staging = Reserve(slot, bytes, context);
  std::memcpy(staging, host.raw_data(), bytes);
  DFLOW_CUDA(cudaMemcpyAsync(out.raw_data(), staging, bytes, cudaMemcpyHostToDevice, stream),
             context);
  DFLOW_CUDA(cudaEventRecord(slot.done, stream), context);
  return out;
}

// device -> pinned staging -> host bytes: the caller reads them, so this
// waits for the stream (and so for the kernels that produce the value).
Tensor CudaDevice::CopyToHost(const Tensor& on_device, std::string_view context) {
  Tensor out(on_device.dtype(), on_device.shape(), CpuAllocator());
  size_t bytes = on_device.TotalBytes();
  if (bytes == 0) return out;
  if (on_device.allocator() != allocator())
    Fail(Code::kInternal, context, ": CopyToHost got ", on_device.SummaryString(), " from ",
         on_device.allocator() ? on_device.allocator()->name() : "nowhere", ", not from ", name());
  cudaStream_t stream = Activate(context);
  std::lock_guard<std::mutex> lock(download_mu_);
  void* staging = Reserve(download_, bytes, context);
  DFLOW_CUDA(cudaMemcpyAsync(staging, on_device.raw_data(), bytes, cudaMemcpyDeviceToHost, stream),
             context);
  DFLOW_CUDA(cudaStreamSynchronize(stream), context);
  std::memcpy(out.raw_data(), staging, bytes);
  return out;
}

CudaDevice& AsCudaDevice(Device& device) {
  auto* gpu = dynamic_cast<CudaDevice*>(&device);
  if (!gpu) Fail(Code::kInternal, "a CUDA kernel runs on ", device.name(), ", which is not a GPU");
  return *gpu;
}

}  // namespace dflow

#include "graph/allocator.h"

#include <cstdlib>
#include <cstring>

#include "graph/status.h"

namespace dflow {

AllocatorStats Allocator::stats() const {
  return {bytes_in_use_.load(std::memory_order_relaxed),
          peak_bytes_in_use_.load(std::memory_order_relaxed),
          num_allocations_.load(std::memory_order_relaxed)};
}

void Allocator::ResetPeak() {
  peak_bytes_in_use_.store(bytes_in_use_.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
}

void Allocator::RecordAllocate(size_t bytes) {
  int64_t now = bytes_in_use_.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed) +
                static_cast<int64_t>(bytes);
  num_allocations_.fetch_add(1, std::memory_order_relaxed);
  int64_t peak = peak_bytes_in_use_.load(std::memory_order_relaxed);
  while (now > peak &&
         !peak_bytes_in_use_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void Allocator::RecordDeallocate(size_t bytes) {
  bytes_in_use_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
}

void Allocator::CopyWithin(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

namespace {

class HostAllocator final : public Allocator {
 public:
  std::string name() const override { return "cpu"; }

  void* Allocate(size_t bytes) override {
    // aligned_alloc wants a size that is a multiple of the alignment.
    size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* ptr = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
    if (!ptr) Fail(Code::kUnavailable, "out of host memory allocating ", bytes, " bytes");
    RecordAllocate(bytes);
    return ptr;
  }

  void Deallocate(void* ptr, size_t bytes) override {
    std::free(ptr);
    RecordDeallocate(bytes);
  }
};

}  // namespace

Allocator* CpuAllocator() {
  static HostAllocator* allocator = new HostAllocator;  // never destroyed: tensors may outlive main
  return allocator;
}

}  // namespace dflow

#include "graph/allocator.h"

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>
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

// Large freed blocks are kept, by size, for the next allocation of that size
// instead of going back to the C library. A training step frees and
// reallocates the same sizes every step, and glibc serves multi-MB requests
// (always, from the pool's threads, whose arenas are capped at 64 MB heaps)
// with fresh mmaps: every page of every activation then faults in and is
// zeroed by the kernel again on each step, ~5-10% of MobileNet-SSD's training
// CPU time. At most kMaxCachedBytes stay cached; beyond that blocks are freed.
class BlockCache {
 public:
  static constexpr size_t kMinBytes = size_t{64} << 10;   // smaller ones: malloc's own bins
  static constexpr size_t kMaxCachedBytes = size_t{512} << 20;
  static constexpr size_t kPage = 4096;

  // Sizes are rounded up to whole pages so that near sizes share blocks.
  static size_t Rounded(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

  void* Take(size_t rounded) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(rounded);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* ptr = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= rounded;
    return ptr;
  }
  // False when the cache is full: the caller frees the block.
  bool Put(void* ptr, size_t rounded) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_bytes_ + rounded > kMaxCachedBytes) return false;
    free_[rounded].push_back(ptr);
    cached_bytes_ += rounded;
    return true;
  }

 private:
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
};

class HostAllocator final : public Allocator {
 public:
  std::string name() const override { return "cpu"; }

  void* Allocate(size_t bytes) override {
    size_t size = Size(bytes);
    void* ptr = size >= BlockCache::kMinBytes ? cache_.Take(size) : nullptr;
    if (!ptr) ptr = std::aligned_alloc(kAlignment, size);
    if (!ptr) Fail(Code::kUnavailable, "out of host memory allocating ", bytes, " bytes");
    RecordAllocate(bytes);
    return ptr;
  }

  void Deallocate(void* ptr, size_t bytes) override {
    size_t size = Size(bytes);
    if (size < BlockCache::kMinBytes || !cache_.Put(ptr, size)) std::free(ptr);
    RecordDeallocate(bytes);
  }

 private:
  // What is asked of aligned_alloc: a multiple of the alignment (it wants
  // one), whole pages for cached sizes.
  static size_t Size(size_t bytes) {
    size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded == 0) return kAlignment;
    return rounded >= BlockCache::kMinBytes ? BlockCache::Rounded(rounded) : rounded;
  }

  BlockCache cache_;
};

}  // namespace

Allocator* CpuAllocator() {
  static HostAllocator* allocator = new HostAllocator;  // never destroyed: tensors may outlive main
  return allocator;
}

}  // namespace dflow

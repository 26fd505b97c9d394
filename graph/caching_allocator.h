// CachingAllocator: an Allocator that keeps freed blocks in size-class bins
// and hands them out again, so that a training loop stops calling the
// backing allocator (cudaMalloc for a GPU) after its first steps. It is a
// plain host class over an abstract BackingAllocator, so its bookkeeping is
// tested without a GPU (tests/graph/test_caching_allocator.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/allocator.h"

namespace dflow {

// Where the cached blocks really come from.
class BackingAllocator {
 public:
  virtual ~BackingAllocator() = default;
  virtual std::string name() const = 0;
  // Null when out of memory (the caching allocator then frees its cache and
  // tries once more); throws on any other failure.
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Free(void* ptr) = 0;
  virtual bool host_accessible() const { return true; }
  virtual void Copy(void* dst, const void* src, size_t bytes) = 0;
};

struct CachingAllocatorStats {
  int64_t bytes_in_use = 0;        // rounded sizes of the blocks handed out
  int64_t peak_bytes_in_use = 0;
  int64_t bytes_cached = 0;        // freed blocks kept for reuse
  int64_t backing_allocations = 0; // calls that reached the backing allocator
  int64_t cache_hits = 0;
};

class CachingAllocator final : public Allocator {
 public:
  // Blocks up to 1 MiB are rounded to 512 bytes, bigger ones to 2 MiB: few
  // bins for the many small tensors, little waste on the big ones.
  static constexpr size_t kSmallQuantum = 512;
  static constexpr size_t kSmallLimit = size_t{1} << 20;
  static constexpr size_t kLargeQuantum = size_t{2} << 20;
  static size_t RoundedSize(size_t bytes);

  explicit CachingAllocator(std::unique_ptr<BackingAllocator> backing);
  ~CachingAllocator() override;  // returns the cache; blocks still in use are reported, not freed

  std::string name() const override { return "caching(" + backing_->name() + ")"; }
  void* Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) override;
  bool host_accessible() const override { return backing_->host_accessible(); }
  void CopyWithin(void* dst, const void* src, size_t bytes) override {
    if (bytes) backing_->Copy(dst, src, bytes);
  }
  CachingAllocatorStats caching_stats() const;
  // Returns every cached block to the backing allocator.
  void EmptyCache();

 private:
  void EmptyCacheLocked();

  std::unique_ptr<BackingAllocator> backing_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_blocks_;  // rounded size -> blocks
  std::map<void*, size_t> live_blocks_;               // block -> rounded size
  CachingAllocatorStats stats_;
};

}  // namespace dflow

#include "graph/caching_allocator.h"

#include <algorithm>
#include <cstdio>

#include "graph/status.h"

namespace dflow {

size_t CachingAllocator::RoundedSize(size_t bytes) {
  if (bytes == 0) bytes = 1;  // a zero-byte tensor still gets a distinct address
  size_t quantum = bytes <= kSmallLimit ? kSmallQuantum : kLargeQuantum;
  return (bytes + quantum - 1) / quantum * quantum;
}

CachingAllocator::CachingAllocator(std::unique_ptr<BackingAllocator> backing)
    : backing_(std::move(backing)) {
  if (!backing_) Fail(Code::kInvalidArgument, "CachingAllocator needs a backing allocator");
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  EmptyCacheLocked();
  // Tensors that outlive their device keep dangling memory; say so rather
  // than free it under them.
  if (!live_blocks_.empty())
    std::fprintf(stderr, "dflow: %s destroyed with %zu blocks still in use\n",
                 backing_->name().c_str(), live_blocks_.size());
}

void* CachingAllocator::Allocate(size_t bytes) {
  size_t rounded = RoundedSize(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  void* ptr = nullptr;
  auto bin = free_blocks_.find(rounded);
  if (bin != free_blocks_.end() && !bin->second.empty()) {
    ptr = bin->second.back();
    bin->second.pop_back();
    stats_.bytes_cached -= static_cast<int64_t>(rounded);
    ++stats_.cache_hits;
  } else {
    ptr = backing_->Allocate(rounded);
    if (!ptr && stats_.bytes_cached > 0) {  // other bins may hold what we need
      EmptyCacheLocked();
      ptr = backing_->Allocate(rounded);
    }
    if (!ptr)
      Fail(Code::kUnavailable, backing_->name(), ": out of memory allocating ", bytes,
           " bytes (", stats_.bytes_in_use, " bytes in use, peak ", stats_.peak_bytes_in_use, ")");
    ++stats_.backing_allocations;
  }
  live_blocks_.emplace(ptr, rounded);
  stats_.bytes_in_use += static_cast<int64_t>(rounded);
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  RecordAllocate(bytes);
  return ptr;
}

void CachingAllocator::Deallocate(void* ptr, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_blocks_.find(ptr);
  if (it == live_blocks_.end())
    Fail(Code::kInternal, name(), ": freeing a block it did not hand out (", bytes, " bytes)");
  size_t rounded = it->second;
  live_blocks_.erase(it);
  free_blocks_[rounded].push_back(ptr);
  stats_.bytes_in_use -= static_cast<int64_t>(rounded);
  stats_.bytes_cached += static_cast<int64_t>(rounded);
  RecordDeallocate(bytes);
}

CachingAllocatorStats CachingAllocator::caching_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CachingAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mu_);
  EmptyCacheLocked();
}

void CachingAllocator::EmptyCacheLocked() {
  for (auto& [size, blocks] : free_blocks_)
    for (void* ptr : blocks) backing_->Free(ptr);
  free_blocks_.clear();
  stats_.bytes_cached = 0;
}

}  // namespace dflow

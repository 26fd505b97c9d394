#include "graph/allocator.h"

#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <vector>

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

namespace {

std::atomic<int64_t> max_allocation_override{0};

int64_t PhysicalMemoryBytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::numeric_limits<int64_t>::max();  // unknown: no limit
  return static_cast<int64_t>(pages) * page;
}

// "1073741824", "512M", "8G": a positive byte count with an optional binary suffix.
int64_t ParseByteCount(const std::string& text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  std::string_view suffix(end, text.data() + text.size() - end);
  int shift = suffix.empty() ? 0 : suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30
              : suffix == "T" ? 40 : -1;
  if (ec != std::errc() || value <= 0 || shift < 0 || value > (INT64_MAX >> shift))
    Fail(Code::kInvalidArgument, "DFLOW_MAX_ALLOCATION='", text, "' is not a byte count "
         "(a positive integer, optionally followed by K, M, G or T)");
  return value << shift;
}

int64_t DefaultMaxAllocationBytes() {
  const char* env = std::getenv("DFLOW_MAX_ALLOCATION");
  if (env && *env) return ParseByteCount(env);
  return PhysicalMemoryBytes();
}

// "4.0 MiB (4194304 bytes)"
std::string ByteCountText(uint64_t bytes) {
  if (bytes < 1024) return StrCat(bytes, " bytes");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  for (; value >= 1024 && unit < 5; ++unit) value /= 1024;
  std::ostringstream out;
  out.precision(1);
  out << std::fixed << value << " " << units[unit] << " (" << bytes << " bytes)";
  return out.str();
}

}  // namespace

int64_t MaxAllocationBytes() {
  int64_t set = max_allocation_override.load(std::memory_order_relaxed);
  if (set > 0) return set;
  static const int64_t default_limit = DefaultMaxAllocationBytes();
  return default_limit;
}

void SetMaxAllocationBytes(int64_t bytes) {
  DFLOW_REQUIRE(bytes >= 0, "the allocation limit must be positive (0: the default), got ", bytes);
  max_allocation_override.store(bytes, std::memory_order_relaxed);
}

void FailAllocationTooLarge(uint64_t bytes, std::string_view what) {
  int64_t limit = MaxAllocationBytes();
  Fail(Code::kInvalidArgument, "cannot allocate ", ByteCountText(bytes), " for ", what,
         ": above the allocation limit of ", ByteCountText(static_cast<uint64_t>(limit)),
         " (the machine's memory unless DFLOW_MAX_ALLOCATION says otherwise)");
}

}  // namespace dflow

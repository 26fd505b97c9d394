// The caching allocator's bookkeeping over a fake backing allocator: size
// classes, reuse without new backing allocations after warm-up, stats, the
// empty-the-cache-and-retry path when the backing memory runs out.
#include <cstdlib>
#include <set>

#include <catch2/catch.hpp>

#include "graph/caching_allocator.h"
#include "graph/status.h"

using namespace dflow;

namespace {

// Host memory with a byte budget and counters, standing in for cudaMalloc.
class FakeMemory final : public BackingAllocator {
 public:
  struct Counters {
    int allocations = 0, frees = 0;
    size_t live_bytes = 0;
  };
  FakeMemory(size_t budget, Counters* counters) : budget_(budget), counters_(counters) {}
  std::string name() const override { return "fake"; }
  void* Allocate(size_t bytes) override {
    if (counters_->live_bytes + bytes > budget_) return nullptr;
    ++counters_->allocations;
    counters_->live_bytes += bytes;
    sizes_[next_] = bytes;
    return reinterpret_cast<void*>(next_++ * 4096 + 4096);  // never dereferenced
  }
  void Free(void* ptr) override {
    size_t key = (reinterpret_cast<size_t>(ptr) - 4096) / 4096;
    ++counters_->frees;
    counters_->live_bytes -= sizes_.at(key);
    sizes_.erase(key);
  }
  void Copy(void*, const void*, size_t) override {}

 private:
  size_t budget_;
  Counters* counters_;
  size_t next_ = 0;
  std::map<size_t, size_t> sizes_;
};

CachingAllocator MakeAllocator(size_t budget, FakeMemory::Counters* counters) {
  return CachingAllocator(std::make_unique<FakeMemory>(budget, counters));
}

}  // namespace

TEST_CASE("caching allocator: size classes round small blocks to 512 B and big ones to 2 MiB") {
  CHECK(CachingAllocator::RoundedSize(0) == 512);
  CHECK(CachingAllocator::RoundedSize(1) == 512);
  CHECK(CachingAllocator::RoundedSize(512) == 512);
  CHECK(CachingAllocator::RoundedSize(513) == 1024);
  CHECK(CachingAllocator::RoundedSize(size_t{1} << 20) == (size_t{1} << 20));
  CHECK(CachingAllocator::RoundedSize((size_t{1} << 20) + 1) == (size_t{2} << 20));
  CHECK(CachingAllocator::RoundedSize((size_t{2} << 20) + 1) == (size_t{4} << 20));
}

TEST_CASE("caching allocator: a training loop stops reaching the backing allocator after warm-up") {
  FakeMemory::Counters counters;
  CachingAllocator allocator(std::make_unique<FakeMemory>(size_t{1} << 30, &counters));
  const std::vector<size_t> step_sizes = {100, 4000, 4000, 70000, size_t{3} << 20, 12};
  for (int step = 0; step < 5; ++step) {
    std::vector<void*> blocks;
    for (size_t bytes : step_sizes) blocks.push_back(allocator.Allocate(bytes));
    CHECK(std::set<void*>(blocks.begin(), blocks.end()).size() == blocks.size());
    for (size_t i = 0; i < blocks.size(); ++i) allocator.Deallocate(blocks[i], step_sizes[i]);
  }
  CachingAllocatorStats stats = allocator.caching_stats();
  CHECK(counters.allocations == static_cast<int>(step_sizes.size()));  // first step only
  CHECK(stats.backing_allocations == static_cast<int64_t>(step_sizes.size()));
  CHECK(stats.cache_hits == 4 * static_cast<int64_t>(step_sizes.size()));
  CHECK(stats.bytes_in_use == 0);
  CHECK(stats.bytes_cached == static_cast<int64_t>(counters.live_bytes));
  CHECK(allocator.stats().bytes_in_use == 0);
  CHECK(allocator.stats().num_allocations == 5 * static_cast<int64_t>(step_sizes.size()));
}

TEST_CASE("caching allocator: stats count rounded bytes in use, peak and cached") {
  FakeMemory::Counters counters;
  auto allocator = MakeAllocator(size_t{1} << 30, &counters);
  void* a = allocator.Allocate(1000);  // 1024
  void* b = allocator.Allocate(100);   // 512
  CHECK(allocator.caching_stats().bytes_in_use == 1536);
  allocator.Deallocate(a, 1000);
  CachingAllocatorStats stats = allocator.caching_stats();
  CHECK(stats.bytes_in_use == 512);
  CHECK(stats.peak_bytes_in_use == 1536);
  CHECK(stats.bytes_cached == 1024);
  // A different size class does not take the cached 1024-byte block.
  void* c = allocator.Allocate(2000);
  CHECK(c != a);
  CHECK(allocator.caching_stats().bytes_cached == 1024);
  // The same class does.
  void* d = allocator.Allocate(900);
  CHECK(d == a);
  allocator.Deallocate(b, 100);
  allocator.Deallocate(c, 2000);
  allocator.Deallocate(d, 900);
  allocator.EmptyCache();
  CHECK(allocator.caching_stats().bytes_cached == 0);
  CHECK(counters.live_bytes == 0);
  CHECK(counters.frees == counters.allocations);
}

TEST_CASE("caching allocator: out of backing memory, it returns its cache and retries") {
  FakeMemory::Counters counters;
  auto allocator = MakeAllocator(4096, &counters);
  void* small = allocator.Allocate(3000);  // 3072 of the 4096 budget
  allocator.Deallocate(small, 3000);       // cached, still held from the backing
  void* other = allocator.Allocate(2048);  // needs the cached block given back first
  CHECK(other != nullptr);
  CHECK(counters.frees == 1);
  CHECK(allocator.caching_stats().bytes_cached == 0);
  allocator.Deallocate(other, 2048);
}

TEST_CASE("caching allocator: running out names the allocator and the request") {
  FakeMemory::Counters counters;
  auto allocator = MakeAllocator(1024, &counters);
  try {
    allocator.Allocate(5000);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kUnavailable);
    CHECK_THAT(e.what(), Catch::Contains("fake") && Catch::Contains("5000 bytes"));
  }
}

TEST_CASE("caching allocator: freeing a block it never handed out is an error, not a corruption") {
  FakeMemory::Counters counters;
  auto allocator = MakeAllocator(1 << 20, &counters);
  int local = 0;
  CHECK_THROWS_AS(allocator.Deallocate(&local, 4), Error);
}

// Allocators hand out aligned memory for tensor buffers and keep the counts
// that RunMetadata reports (bytes in use, peak). Each Device owns one.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dflow {

struct AllocatorStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t num_allocations = 0;
};

class Allocator {
 public:
  static constexpr size_t kAlignment = 64;  // a cache line; enough for AVX-512 loads

  virtual ~Allocator() = default;
  virtual std::string name() const = 0;
  // Returns memory aligned to kAlignment; never null (throws on exhaustion).
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Deallocate(void* ptr, size_t bytes) = 0;
  // False for memory the host cannot dereference (a GPU's); such tensors
  // are read through their device's copy functions.
  virtual bool host_accessible() const { return true; }
  // Copies `bytes` from src to dst, both blocks of this allocator's memory.
  virtual void CopyWithin(void* dst, const void* src, size_t bytes);

  AllocatorStats stats() const;
  // Starts a new peak measurement from the current bytes in use.
  void ResetPeak();

 protected:
  void RecordAllocate(size_t bytes);
  void RecordDeallocate(size_t bytes);

 private:
  std::atomic<int64_t> bytes_in_use_{0};
  std::atomic<int64_t> peak_bytes_in_use_{0};
  std::atomic<int64_t> num_allocations_{0};
};

// The process-wide host allocator.
Allocator* CpuAllocator();

// The largest single buffer dflow asks any allocator for (and the largest
// file it reads into memory), in bytes. A request above it fails at once with
// kInvalidArgument naming the size and the limit, instead of being attempted:
// a hostile shape must not swap the machine to a halt or get the process
// killed. Default: the machine's physical memory; the environment variable
// DFLOW_MAX_ALLOCATION overrides it with a byte count, optionally with a
// binary suffix K, M, G or T ("512M", "8G").
int64_t MaxAllocationBytes();
// Sets the limit for this process (a program's flag, a test); 0 restores the default.
void SetMaxAllocationBytes(int64_t bytes);
// Throws kInvalidArgument naming the size, `what` and the limit.
[[noreturn]] void FailAllocationTooLarge(uint64_t bytes, std::string_view what);
// FailAllocationTooLarge when `bytes` exceeds MaxAllocationBytes(). `what()`
// names the buffer ("float32[4096,4096]", "'graph.json'"); it is called only
// then, so the name costs nothing on the usual path.
template <typename DescribeBuffer>
void CheckAllocationSize(uint64_t bytes, DescribeBuffer&& what) {
  if (bytes > static_cast<uint64_t>(MaxAllocationBytes())) FailAllocationTooLarge(bytes, what());
}

}  // namespace dflow

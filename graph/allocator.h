// Allocators hand out aligned memory for tensor buffers and keep the counts
// that RunMetadata reports (bytes in use, peak). Each Device owns one.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

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

}  // namespace dflow

// The product behind a convolution's forward pass and input gradient:
// c[m, n] = a[m, k] * b, where m is long (every output pixel of the batch)
// and b, the filter or its transpose, is the same for every block of rows.
// b is packed once per kernel call; each block of rows then reuses it.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/thread_pool.h"
#include "ops/cpu/cpu_isa.h"

namespace dflow::cpu {

// b ([k, n] row-major, or b^T of a row-major [n, k] when transpose) ready to
// multiply blocks of rows: c[m, n] = a[m, k] * b. For float, b is packed into
// column panels and multiplied by a register-blocked kernel
// (ops/cpu/gemm_packed.cc) for the active CpuIsa; other types keep a pointer and call cpu::Gemm.
// The object must not outlive b.
template <typename T>
class FixedRhsGemm {
 public:
  FixedRhsGemm(const T* b, int64_t k, int64_t n, bool transpose);

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }

  // c[m, n] = a[m, k] * b on this thread; a and c are dense row-major.
  void Multiply(const T* a, int64_t m, T* c) const;
  // The same with the rows split over the pool (pool null: this thread).
  void Multiply(ThreadPool* pool, const T* a, int64_t m, T* c) const;

 private:
  const T* b_;
  int64_t k_, n_;
  bool transpose_;
  CpuIsa isa_;  // the instruction set the panels were packed for, and that multiplies them
  // float only: panel of columns [j0, j0 + width) at j0 * k, as [k][width].
  std::vector<T> panels_;
};

}  // namespace dflow::cpu

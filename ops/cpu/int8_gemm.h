// The integer product under quantized convolutions and matrix products:
//
//   c[i, j] = sum_p (a[i, p] - a_zero) * b[p, j]
//
// with a [m, k] uint8 activations (asymmetric: the zero point a_zero is the
// code of 0.0), b [k, n] int8 weights (symmetric: zero point 0, a scale per
// column -- per output channel -- applied by the caller) and c int32. The
// sum is exact: every product fits in 16 bits and c in 32 bits for any k
// below 2^16, so every instruction set gives the same bits.
//
// b is packed once, for the instruction set active when the object is made
// (ops/cpu/cpu_isa.h), and multiplied by that set's kernel:
//   avx512_vnni / avx_vnni  VPDPBUSD: four u8 x s8 products summed into each
//                           int32 lane, 16 (zmm) or 8 (ymm) columns at a time;
//   avx2 (and avx512)       VPMADDWD on 16-bit pairs: two products per lane;
//   generic                 plain loops, which the compiler vectorises.
// The zero point's share comes first: the sums start at -a_zero * (column
// sums of b), then add a b.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "graph/thread_pool.h"
#include "ops/cpu/cpu_isa.h"

namespace dflow::cpu {

class Int8Rhs {
 public:
  // b [k, n] row-major; k < 2^16 (so that no int32 sum can overflow).
  Int8Rhs(const int8_t* b, int64_t k, int64_t n);

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  CpuIsa isa() const { return isa_; }

  // Columns are computed in panels of this many (16 or 32; the plain loops
  // have no panels, and take 32).
  int64_t panel_width() const { return group_ == 1 ? 32 : 2 * lanes_; }

  // c[m, n] = (a - a_zero) * b for a [m, k] uint8 (row stride k), on this thread.
  void Multiply(const uint8_t* a, int64_t m, int32_t a_zero, int32_t* c) const;
  // The same with the rows split over the pool (null: this thread), for a
  // of row stride lda (0: k; the codes past k in a row are multiplied by
  // nothing, so a row can be padded to whole groups of four).
  void Multiply(ThreadPool* pool, const uint8_t* a, int64_t m, int32_t a_zero, int32_t* c, int64_t lda = 0) const;
  // c[m, cols] (row stride ldc) = the columns [first, first + cols) of
  // (a - a_zero) * b, a of row stride lda >= k, first a multiple of
  // panel_width(): a part of the columns, for threads that split them.
  void MultiplyColumns(const uint8_t* a, int64_t lda, int64_t m, int32_t a_zero, int64_t first, int64_t cols,
                       int32_t* c, int64_t ldc) const;

 private:
  int64_t k_, n_;
  CpuIsa isa_;
  int64_t group_ = 1;   // k is read in groups of this many (4: VPDPBUSD, 2: VPMADDWD, 1: generic)
  int64_t lanes_ = 1;   // int32 columns per vector; n is padded to a multiple of 2 * lanes_
  std::vector<int8_t> packed8_;    // VNNI: [k / 4][n padded][4]; generic: b as given
  std::vector<int16_t> packed16_;  // avx2: [k / 2][n padded][2]
  std::vector<int32_t> column_sums_;  // sum_p b[p, j]
};

// The packed weights of one kernel, kept across its runs: a frozen graph's
// weights are the same tensor every step, so they are packed once. Get
// compares the key (the caller's shape numbers), the bytes (cheap beside a
// product over them) and the instruction set of the packing with the last
// call's, and packs again when any changed (a fed filter, DFLOW_CPU_ISA).
// Safe to call from several threads.
class Int8RhsCache {
 public:
  using Packed = std::vector<Int8Rhs>;
  using Pack = std::function<Packed(const int8_t* bytes)>;
  std::shared_ptr<const Packed> Get(const std::vector<int64_t>& key, const int8_t* bytes, int64_t size,
                                    const Pack& pack);

 private:
  std::mutex mu_;
  std::vector<int64_t> key_;
  std::vector<int8_t> bytes_;
  CpuIsa isa_ = CpuIsa::kGeneric;
  std::shared_ptr<const Packed> packed_;
};

}  // namespace dflow::cpu

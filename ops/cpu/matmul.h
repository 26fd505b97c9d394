// Matrix product on the CPU: Eigen's GEMM on row-major buffers, split over a
// thread pool in blocks of output rows (or columns when the output is wide),
// each block one single-threaded Eigen call. Used by MatMul and BatchMatMul.
#pragma once

#include <cstdint>

#include "graph/thread_pool.h"

namespace dflow::cpu {

// c[m, n] = op(a) * op(b) with op(a) [m, k] and op(b) [k, n]; a is stored
// row-major as [m, k] (or [k, m] when transpose_a), b as [k, n] (or [n, k]
// when transpose_b), c as [m, n]. c must not overlap a or b. With pool null
// (or small products) everything runs on the calling thread. Instantiated
// for float, double, int32_t and int64_t.
template <typename T>
void Gemm(ThreadPool* pool, const T* a, const T* b, T* c, int64_t m, int64_t k, int64_t n,
          bool transpose_a, bool transpose_b);

// Below this many multiply-adds a product is not worth splitting.
inline constexpr int64_t kMinGemmWorkPerThread = int64_t{1} << 17;

}  // namespace dflow::cpu

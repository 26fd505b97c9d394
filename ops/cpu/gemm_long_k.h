// A float product for the shape that a general GEMM handles worst: a long
// inner dimension and a small output, c[m, n] = a^T * b with a [k, m] and
// b [k, n] both row-major: the filter gradient of a convolution,
// dw = x^T * dy, where k is every pixel of the batch. Called by cpu::Gemm
// (ops/cpu/matmul.h) when LongKPays says so.
#pragma once

#include <cstdint>
#include <functional>

#include "graph/thread_pool.h"

namespace dflow::cpu {

// True when GemmLongK should beat the general product for a^T * b of these sizes.
bool LongKPays(int64_t m, int64_t k, int64_t n);

// c[m, n] = sum_p a[p, :]^T b[p, :] (a [k, m], b [k, n], c [m, n], all
// row-major and dense). The k rows are split over the pool's threads, each
// summing into its own partial c; the partials are added in order at the end
// (deterministic for a given thread count). pool may be null.
void GemmLongK(ThreadPool* pool, const float* a, const float* b, float* c, int64_t m, int64_t k,
               int64_t n);

// The same sum over rows that need not form matrices: rows(first, count,
// a_rows, b_rows) sets a_rows[q] (m floats) and b_rows[q] (n floats) to the
// rows numbered first + q of a and b, q < count. A convolution's filter
// gradient for one tap is such a sum over (input pixel, output pixel) pairs,
// with no im2col copy.
using RowPairs = std::function<void(int64_t first, int64_t count, const float** a_rows,
                                    const float** b_rows)>;
void GemmLongK(ThreadPool* pool, const RowPairs& rows, float* c, int64_t m, int64_t k, int64_t n);

}  // namespace dflow::cpu

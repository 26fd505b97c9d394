// Parallel loops over NHWC images shared by the pooling and resize kernels:
// gathers split by (image, output row); scatters, whose output windows of
// neighbouring rows overlap, split by image so that one task writes each
// image's output.
#pragma once

#include <algorithm>
#include <cstdint>

#include "graph/thread_pool.h"

namespace dflow {

// Calls row(n, i) for every image n < batch and row i < rows, in parallel.
template <typename Row>
void ForEachImageRow(ThreadPool& pool, int64_t batch, int64_t rows, int64_t row_cost,
                     const Row& row) {
  pool.ParallelFor(batch * rows, row_cost, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) row(r / rows, r % rows);
  });
}

// Zeroes out[n * image_size, (n + 1) * image_size) and calls image(n), which
// adds into it, for every image n < batch, in parallel.
template <typename T, typename Image>
void ScatterEachImage(ThreadPool& pool, int64_t batch, int64_t image_size, int64_t image_cost,
                      T* out, const Image& image) {
  pool.ParallelFor(batch, image_cost, [&](int64_t begin, int64_t end) {
    std::fill(out + begin * image_size, out + end * image_size, T(0));
    for (int64_t n = begin; n < end; ++n) image(n);
  });
}

}  // namespace dflow

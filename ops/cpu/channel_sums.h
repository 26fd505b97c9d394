// Per-channel sums over the rows of a [rows, channels] view of an NHWC (or
// any channels-last) tensor, accumulated in double so that float32 sums of
// millions of terms keep their precision. Used by BiasAddGrad and the batch
// norm kernels.
//
// The rows split into a fixed number of blocks that depends only on the
// shape (not on the thread count), each block sums into its own partial
// vector and the partials are added in block order: results are the same on
// every run.
#pragma once

#include <algorithm>
#include <vector>

#include "graph/thread_pool.h"

namespace dflow {

// Returns `width` doubles (e.g. k sums per channel, laid out as the caller
// likes) equal to the total over r in [0, rows) of what add_row(r, acc)
// adds into acc[0, width). row_cost: rough operations per row.
template <typename AddRow>
std::vector<double> SumOverRows(ThreadPool& pool, int64_t rows, int64_t width, int64_t row_cost,
                                const AddRow& add_row) {
  constexpr int64_t kElementsPerBlock = int64_t{1} << 15;
  constexpr int64_t kMaxBlocks = 64;
  int64_t blocks = std::clamp<int64_t>(rows * std::max<int64_t>(row_cost, 1) / kElementsPerBlock,
                                       1, kMaxBlocks);
  blocks = std::max<int64_t>(std::min(blocks, rows), 1);
  std::vector<double> partials(blocks * width, 0.0);
  pool.ParallelFor(blocks, rows / blocks * row_cost, [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      double* acc = partials.data() + b * width;
      for (int64_t r = rows * b / blocks; r < rows * (b + 1) / blocks; ++r) add_row(r, acc);
    }
  });
  std::vector<double> total(partials.begin(), partials.begin() + width);
  for (int64_t b = 1; b < blocks; ++b)
    for (int64_t k = 0; k < width; ++k) total[k] += partials[b * width + k];
  return total;
}

}  // namespace dflow

// CPU Transpose. Output dim d walks input dim perm[d]; after dropping size-1
// dims and merging dims that stay adjacent, many permutations become a plain
// copy (shared buffer), a batch of 2-D transposes (done in cache-sized tiles),
// or a gather whose innermost run is contiguous.
#include <algorithm>

#include "graph/kernel.h"
#include "ops/array_shapes.h"
#include "ops/cpu/array_copy.h"

namespace dflow {
namespace {

constexpr int64_t kTile = 32;

// out[b][i][j] = in[batch_offset(b) + i + j * col_step] for i < rows, j < cols,
// where the batch dims are dims[0..k-2] with input steps steps[0..k-2].
template <typename U>
void BatchedTranspose(const U* in, U* out, const std::vector<int64_t>& dims,
                      const std::vector<int64_t>& steps, ThreadPool& pool) {
  int k = static_cast<int>(dims.size());
  int64_t rows = dims[k - 2], cols = dims[k - 1], col_step = steps[k - 1];
  int64_t batches = 1;
  for (int d = 0; d < k - 2; ++d) batches *= dims[d];
  int64_t row_tiles = (rows + kTile - 1) / kTile;
  // One work unit: one band of kTile rows of one batch entry.
  pool.ParallelFor(batches * row_tiles, kTile * cols, [&](int64_t begin, int64_t end) {
    for (int64_t unit = begin; unit < end; ++unit) {
      int64_t batch = unit / row_tiles, i0 = (unit % row_tiles) * kTile;
      int64_t i1 = std::min(rows, i0 + kTile);
      int64_t base = 0, rest = batch;
      for (int d = k - 3; d >= 0; --d) {
        base += (rest % dims[d]) * steps[d];
        rest /= dims[d];
      }
      const U* src = in + base;
      U* dst = out + batch * rows * cols;
      for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
        int64_t j1 = std::min(cols, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j) dst[i * cols + j] = src[i + j * col_step];
      }
    }
  });
}

class TransposeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Tensor& perm_tensor = ctx.input(1);
    DFLOW_REQUIRE(perm_tensor.rank() == 1, "perm must be a vector, got shape ",
                  perm_tensor.shape().ToString());
    std::vector<int64_t> perm = ReadInt64s(perm_tensor, "perm");
    Shape out_shape = array::TransposeShape(input.shape(), perm);
    std::vector<int64_t> in_strides = Strides(input.shape());
    std::vector<int64_t> dims = out_shape.dims(), steps(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) steps[d] = in_strides[perm[d]];
    if (input.NumElements() > 0) cpu::CollapseStridedDims(dims, steps);
    if (input.NumElements() == 0 || dims.size() <= 1) {
      // Nothing moves: the elements are already in output order.
      ctx.set_output(0, input.Reshaped(out_shape));
      return;
    }
    Tensor& output = ctx.allocate_output(0, out_shape);
    size_t elem = DTypeSize(input.dtype());
    if (steps[dims.size() - 2] == 1) {
      cpu::DispatchByElementSize(elem, [&]<typename U>() {
        BatchedTranspose(static_cast<const U*>(input.raw_data()), static_cast<U*>(output.raw_data()),
                         dims, steps, ctx.pool());
      });
      return;
    }
    cpu::StridedGather(input.raw_data(), 0, steps, output.raw_data(), dims, elem, ctx.pool());
  }
};

REGISTER_KERNEL("Transpose", "CPU", TransposeKernel);

}  // namespace
}  // namespace dflow

// CPU BatchMatMul kernel: one GEMM per broadcast batch element. Many small
// products run in parallel across batches; a few big ones run one after the
// other, each split over the pool by cpu::Gemm.
#include <algorithm>

#include "graph/kernel.h"
#include "ops/cpu/matmul.h"

namespace dflow {
namespace {

// For each output batch element (row-major over the broadcast batch shape),
// the index of the x and y matrices it multiplies.
struct BatchPlan {
  std::vector<int64_t> batch_dims;
  std::vector<int64_t> x_index, y_index;
};

BatchPlan PlanBatches(const Node& node, const Shape& x, const Shape& y) {
  int rx = x.rank() - 2, ry = y.rank() - 2, rank = std::max(rx, ry);
  BatchPlan plan;
  plan.batch_dims.resize(rank);
  std::vector<int64_t> sx(rank, 0), sy(rank, 0);  // strides in matrices; 0 where broadcast
  int64_t stride_x = 1, stride_y = 1;
  for (int i = rank - 1; i >= 0; --i) {
    int ix = i - (rank - rx), iy = i - (rank - ry);
    int64_t dx = ix >= 0 ? x.dim(ix) : 1, dy = iy >= 0 ? y.dim(iy) : 1;
    DFLOW_REQUIRE(dx == dy || dx == 1 || dy == 1, node.Describe(),
                  ": batch dimensions do not broadcast: x is ", x.ToString(), ", y is ",
                  y.ToString());
    plan.batch_dims[i] = dx == 1 ? dy : dx;
    sx[i] = dx == 1 ? 0 : stride_x;
    sy[i] = dy == 1 ? 0 : stride_y;
    stride_x *= dx;
    stride_y *= dy;
  }
  // The broadcast batch may be far larger than either input's.
  int64_t count = Shape(plan.batch_dims).NumElements();
  plan.x_index.resize(count);
  plan.y_index.resize(count);
  std::vector<int64_t> pos(rank, 0);  // odometer over the output batch dims
  int64_t ox = 0, oy = 0;
  for (int64_t b = 0; b < count; ++b) {
    plan.x_index[b] = ox;
    plan.y_index[b] = oy;
    for (int i = rank - 1; i >= 0; --i) {
      ox += sx[i];
      oy += sy[i];
      if (++pos[i] < plan.batch_dims[i]) break;
      ox -= sx[i] * pos[i];
      oy -= sy[i] * pos[i];
      pos[i] = 0;
    }
  }
  return plan;
}

template <typename T>
class BatchMatMulKernel : public OpKernel {
 public:
  explicit BatchMatMulKernel(const Node& node)
      : OpKernel(node), adj_x_(node.attr<bool>("adj_x")), adj_y_(node.attr<bool>("adj_y")) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    DFLOW_REQUIRE(x.rank() >= 2 && y.rank() >= 2, node().Describe(),
                  ": inputs must have rank >= 2, got x ", x.shape().ToString(), ", y ",
                  y.shape().ToString());
    int rx = x.rank(), ry = y.rank();
    int64_t m = x.dim(adj_x_ ? rx - 1 : rx - 2), k = x.dim(adj_x_ ? rx - 2 : rx - 1);
    int64_t ky = y.dim(adj_y_ ? ry - 1 : ry - 2), n = y.dim(adj_y_ ? ry - 2 : ry - 1);
    DFLOW_REQUIRE(k == ky, node().Describe(), ": inner dimensions differ: x is ",
                  x.shape().ToString(), ", y is ", y.shape().ToString());
    BatchPlan plan = PlanBatches(node(), x.shape(), y.shape());
    std::vector<int64_t> out_dims = plan.batch_dims;
    out_dims.push_back(m);
    out_dims.push_back(n);
    Tensor& out = ctx.allocate_output(0, Shape(std::move(out_dims)));
    const T* xd = x.data<T>();
    const T* yd = y.data<T>();
    T* od = out.data<T>();
    int64_t batches = static_cast<int64_t>(plan.x_index.size());
    int64_t x_size = m * k, y_size = k * n, out_size = m * n;
    auto run = [&](ThreadPool* pool, int64_t b) {
      cpu::Gemm<T>(pool, xd + plan.x_index[b] * x_size, yd + plan.y_index[b] * y_size,
                   od + b * out_size, m, k, n, adj_x_, adj_y_);
    };
    int64_t work = m * n * std::max<int64_t>(k, 1);
    int threads = ctx.pool().num_threads();
    // Few big products: split each one (even load). Many or small: one per task.
    if (batches < 4 * threads && work >= cpu::kMinGemmWorkPerThread * threads) {
      for (int64_t b = 0; b < batches; ++b) run(&ctx.pool(), b);
    } else {
      ctx.pool().ParallelFor(batches, work, [&](int64_t first, int64_t last) {
        for (int64_t b = first; b < last; ++b) run(nullptr, b);
      });
    }
  }

 private:
  bool adj_x_, adj_y_;
};

REGISTER_KERNEL_FOR_TYPES("BatchMatMul", "CPU", BatchMatMulKernel, float, double, int32_t, int64_t);

}  // namespace
}  // namespace dflow

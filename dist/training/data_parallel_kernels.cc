// Kernels of the in-graph data-parallel ops (ops/collective.cc), over the
// process's DataParallelGroup (data_parallel_group.h).
#include "dist/training/data_parallel_group.h"
#include "graph/kernel.h"

namespace dflow::dist {
namespace {

std::shared_ptr<DataParallelGroup> GroupOf(const Node& node) {
  return DataParallelGroup::Find(node.attr<std::string>("group"));
}

// Hands the gradient over and returns; the group delivers the mean (or the
// step's error) once every gradient of the step is in and reduced.
class AllReduceKernel : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(OpKernelContext& ctx, Done done) const override {
    auto index = node().attr<int64_t>("index");
    DFLOW_REQUIRE(index >= 0 && index < (int64_t{1} << 30), node().Describe(), ": index must be >= 0, got ", index);
    GroupOf(node())->Ready(static_cast<int>(index), ctx.input(0),
                           [&ctx, done](Tensor mean, std::optional<Error> error) {
                             if (error) return done(std::move(error));
                             try {
                               ctx.set_output(0, std::move(mean));
                             } catch (const Error& e) {
                               return done(e);
                             }
                             done(std::nullopt);
                           });
  }
};

class BroadcastKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    ctx.set_output(0, GroupOf(node())->Broadcast(node().attr<std::string>("tensor_name"), ctx.input(0).Clone()));
  }
};

REGISTER_KERNEL("DataParallelAllReduce", "CPU", AllReduceKernel);
REGISTER_KERNEL("DataParallelBroadcast", "CPU", BroadcastKernel);

}  // namespace
}  // namespace dflow::dist

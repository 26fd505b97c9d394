// The ops of in-graph data-parallel training (Horovod's allreduce and
// broadcast ops): their kernels (dist/training/data_parallel_kernels.cc) reach the
// process's DataParallelGroup named by `group` (dist/training/data_parallel_group.h), which
// a DistributedOptimizer creates. A graph holding them runs only in the
// process that built it, while that optimizer lives.
#include "graph/op_def.h"

namespace dflow {

// The ring takes float32, float64, float16, int32 and int64 tensors.
static const std::vector<DType> kReducibleTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16,
                                                   DType::kInt32, DType::kInt64};

REGISTER_OP("DataParallelAllReduce")
    .input("gradient", "T")
    .output("mean", "T")
    .attr<std::string>("group")
    .attr<int64_t>("index")
    .type_attr("T", kReducibleTypes)
    .stateful()
    .shape_fn(UnchangedShape)
    .doc("This worker's gradient in, its mean over every worker of the data-parallel group out "
         "(the same bits on every worker). `index` is the gradient's place in the group: the ops "
         "of one step hand their gradients over as backprop produces them, and a full bucket is "
         "all-reduced at once, while backprop goes on. Waits without holding a thread.");

REGISTER_OP("DataParallelBroadcast")
    .input("value", "T")
    .output("chief_value", "T")
    .attr<std::string>("group")
    .attr<std::string>("tensor_name")
    .type_attr("T", kReducibleTypes)
    .stateful()
    .shape_fn(UnchangedShape)
    .doc("The chief's (worker 0's) `value` on every worker of the data-parallel group. Every "
         "worker must run the group's broadcasts in the same order (`tensor_name` is checked); "
         "DistributedOptimizer::BroadcastVariables chains them.");

}  // namespace dflow

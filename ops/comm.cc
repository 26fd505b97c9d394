// _Send and _Recv: the two ends of a cut edge, added by Partition.
// Their attrs carry every part of the rendezvous key except the step id,
// which comes at run time: (send_device, send_device_incarnation,
// recv_device, tensor_name, step). Their kernels: ops/cpu/send_recv.cc.
#include "graph/op_def.h"

namespace dflow {

REGISTER_OP("_Send")
    .input("tensor", "T")
    .type_attr("T", {})
    .attr<std::string>("tensor_name")
    .attr<std::string>("send_device")
    .attr<int64_t>("send_device_incarnation", 1)
    .attr<std::string>("recv_device")
    .stateful()
    .doc(
        "Internal: hands `tensor` to the rendezvous under the key (send_device, "
        "send_device_incarnation, recv_device, tensor_name, step id). Never blocks.");

REGISTER_OP("_Recv")
    .output("tensor", "tensor_type")
    .type_attr("tensor_type", {})
    .attr<std::string>("tensor_name")
    .attr<std::string>("send_device")
    .attr<int64_t>("send_device_incarnation", 1)
    .attr<std::string>("recv_device")
    .attr<Shape>("shape", Shape::Unknown())
    .stateful()
    .shape_fn([](InferenceContext& ctx) { ctx.set_output(0, ctx.attr<Shape>("shape")); })
    .doc(
        "Internal: the tensor a matching _Send handed to the rendezvous under the key "
        "(send_device, send_device_incarnation, recv_device, tensor_name, step id); "
        "`shape` is the sent tensor's static shape.");

}  // namespace dflow

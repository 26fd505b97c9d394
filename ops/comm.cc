// _Send and _Recv: the two ends of a cut edge, added by Partition.
// Their attrs carry every part of the rendezvous key except the step id,
// which comes at run time: (send_device, send_device_incarnation,
// recv_device, tensor_name, step). Their kernels: ops/cpu/send_recv.cc.
// Partition also adds, on a device with memory of its own, the moves
// between its host and device memory (graph/memory_types.h): _HostToDevice,
// _DeviceToHost, and HostConst (ops/state.cc).
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
    .attr<bool>("host_memory", false)
    .stateful()
    .shape_fn([](InferenceContext& ctx) { ctx.set_output(0, ctx.attr<Shape>("shape")); })
    .doc(
        "Internal: the tensor a matching _Send handed to the rendezvous under the key "
        "(send_device, send_device_incarnation, recv_device, tensor_name, step id); "
        "`shape` is the sent tensor's static shape. With `host_memory` a device with "
        "memory of its own keeps it in host memory, for kernels that read it there.");

namespace {

// A tensor moved between its device's host and device memory.
OpDefBuilder MoveOp(const char* name) {
  OpDefBuilder b(name);
  b.input("input", "T").output("output", "T").type_attr("T", {}).shape_fn(
      [](InferenceContext& ctx) { ctx.set_output(0, ctx.input_shape(0)); });
  return b;
}

}  // namespace

[[maybe_unused]] static OpRegistrar host_to_device_op = MoveOp("_HostToDevice").doc(
    "Internal: copies a tensor from the host memory of its device to the device's own.");
[[maybe_unused]] static OpRegistrar device_to_host_op = MoveOp("_DeviceToHost").doc(
    "Internal: copies a tensor from its device's memory to the host's, for a kernel "
    "that reads it there; waits for the work queued before it.");

}  // namespace dflow

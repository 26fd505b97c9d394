// Host memory on a device (TensorFlow's HostMemory). A GPU kernel that needs
// a small shape-like input on the host (Reshape's shape, a convolution
// gradient's sizes) declares it, and so does a kernel whose output is made on
// the host (Shape). Partitioning then sees that every such value is produced
// where it is read: a value the graph knows becomes a HostConst, a tensor
// from another device arrives in host memory, and only a value computed in
// the device's memory is copied, by a _DeviceToHost node the partition shows
// (the reverse, a host value read as device memory, by _HostToDevice).
// Without the declaration a kernel copies such an input back itself, a copy
// that waits for every kernel queued on the device before it.
//
//   REGISTER_HOST_MEMORY("Reshape", "GPU", "shape");
//   REGISTER_HOST_MEMORY("Shape", "GPU", "output");
//
// CPU memory is host memory: on the CPU, every value is in the right place.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "graph/op_def.h"

namespace dflow {

enum class MemoryType { kDevice, kHost };

// Whether tensors on this device type live in memory of its own (every type
// but the CPU's).
bool HasDeviceMemory(std::string_view device_type);

// Declares that on `device_type` the kernels of `op` take or give the named
// input or output args in host memory. Throws naming an arg the op lacks.
void RegisterHostMemory(const std::string& op, const std::string& device_type,
                        const std::vector<std::string>& args);

// Where each input and output of `node` lives when it runs on `device_type`.
// Besides the declared args: a _Recv with `host_memory` set gives host
// memory, and a _Send takes its input from either (marked like its source's
// output by the caller).
struct NodeMemoryTypes {
  std::vector<MemoryType> inputs, outputs;
};
NodeMemoryTypes MemoryTypesOf(const Node& node, const std::string& device_type);

// What is wrong with the declarations so far, one line each (an unknown op,
// an arg the op lacks); empty when nothing. Declarations are checked here,
// not when made: they may run before their ops are registered.
std::vector<std::string> HostMemoryDeclarationErrors();

struct HostMemoryRegistrar {
  HostMemoryRegistrar(const std::string& op, const std::string& device_type,
                      const std::vector<std::string>& args) {
    RegisterHostMemory(op, device_type, args);
  }
};

#define REGISTER_HOST_MEMORY(op, device_type, ...)                                                   \
  [[maybe_unused]] static ::dflow::HostMemoryRegistrar DFLOW_CONCAT(host_memory_registrar_,           \
                                                                     __COUNTER__)(op, device_type, \
                                                                                  {__VA_ARGS__})

}  // namespace dflow

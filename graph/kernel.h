// Kernels: the code that computes one op on one device. A kernel object is
// made once per node when an executor is built (read attrs in the
// constructor) and Compute runs once per step, possibly concurrently from
// several steps, so Compute must not change the kernel's members.
//
// Kernels are registered per (op, device type, dtype) where dtype is the
// value of the op's first type attr; kInvalid registers for any dtype:
//
//   REGISTER_KERNEL("Cast", "CPU", CastKernel);
//   REGISTER_KERNEL_FOR_TYPES("Relu", "CPU", ReluKernel, float, double);
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "graph/device.h"
#include "graph/graph.h"
#include "graph/rendezvous.h"
#include "graph/resource.h"

namespace dflow {

// Per-step state every kernel of the step can see.
struct StepContext {
  int64_t step_id = 0;
  ResourceStore* resources = nullptr;
  const std::vector<Tensor>* args = nullptr;  // fed values, read by _Arg
  std::vector<Tensor>* retvals = nullptr;     // fetched values, written by _Retval
  Rendezvous* rendezvous = nullptr;           // cut edges to the step's other partitions, if any
};

class OpKernelContext {
 public:
  // Bit o of `host_outputs`: output o is allocated in the device's host
  // memory (graph/memory_types.h).
  OpKernelContext(const Node& node, Device& device, StepContext& step, Tensor* const* inputs,
                  const bool* forwardable, Tensor* outputs, uint64_t host_outputs = 0)
      : node_(node), device_(device), step_(step), inputs_(inputs), forwardable_(forwardable),
        outputs_(outputs), host_outputs_(host_outputs) {}

  const Node& node() const { return node_; }
  Device& device() const { return device_; }
  ThreadPool& pool() const { return *device_.compute_pool(); }
  StepContext& step() const { return step_; }
  ResourceStore& resources() const { return *step_.resources; }

  int num_inputs() const { return node_.num_inputs(); }
  const Tensor& input(int i) const { return *inputs_[i]; }
  // For a ref input (Assign's "ref"): the variable behind it.
  Variable* input_variable(int i) const;

  int num_outputs() const { return node_.num_outputs(); }
  // A fresh output of the node's declared dtype, in the device's memory or,
  // for an output declared in host memory, the host's.
  Tensor& allocate_output(int i, Shape shape);
  Allocator* output_allocator(int i) const;
  // Passes an existing tensor through (Identity, Reshape); dtype must match.
  void set_output(int i, Tensor value);
  // The output as set so far (invalid before the kernel sets it).
  const Tensor& output(int i) const { return outputs_[i]; }
  // Writes the output into input `input`'s buffer when this node is its last
  // user and no one else holds it (same dtype and element count), else
  // allocates. Element-wise kernels use it to cut peak memory.
  Tensor& forward_input_or_allocate_output(int input, int output, const Shape& shape);

 private:
  const Node& node_;
  Device& device_;
  StepContext& step_;
  Tensor* const* inputs_;
  const bool* forwardable_;
  Tensor* outputs_;
  uint64_t host_outputs_;
};

class OpKernel {
 public:
  explicit OpKernel(const Node& node) : node_(node) {}
  virtual ~OpKernel() = default;
  virtual void Compute(OpKernelContext& ctx) const = 0;
  const Node& node() const { return node_; }
  // Non-null for a kernel that waits without holding a thread (_Recv).
  virtual const class AsyncOpKernel* AsAsync() const { return nullptr; }

 private:
  const Node& node_;
};

// A kernel whose work finishes later, on another thread (a _Recv waiting for
// its tensor). The executor hands it a context that lives until `done` and
// goes on with the step when `done` is called; no pool thread waits meanwhile,
// so a step cannot deadlock however small the pools are.
class AsyncOpKernel : public OpKernel {
 public:
  // Called exactly once: with nothing once the outputs are set, or with the error.
  using Done = std::function<void(std::optional<Error> error)>;

  using OpKernel::OpKernel;
  virtual void ComputeAsync(OpKernelContext& ctx, Done done) const = 0;
  const AsyncOpKernel* AsAsync() const final { return this; }
  void Compute(OpKernelContext& ctx) const final;  // fails: the executor calls ComputeAsync
};

using KernelFactory = std::function<std::unique_ptr<OpKernel>(const Node&)>;

class KernelRegistry {
 public:
  static KernelRegistry& Global();
  void Register(const std::string& op, const std::string& device_type, DType dtype,
                KernelFactory factory);
  // Throws kUnimplemented naming the node, device and the dtypes that exist.
  std::unique_ptr<OpKernel> Create(const Node& node, const std::string& device_type) const;
  bool Has(const std::string& op, const std::string& device_type) const;
  // Would Create find a kernel for this node: one for its op and dtype (KernelDType)?
  bool HasFor(const Node& node, const std::string& device_type) const;
  // The dtypes registered for (op, device); kInvalid stands for "any".
  std::vector<DType> RegisteredTypes(const std::string& op, const std::string& device_type) const;
  // The device types ("CPU", "GPU") with at least one kernel for `op`.
  std::vector<std::string> DeviceTypesWithKernels(const std::string& op) const;

 private:
  std::map<std::tuple<std::string, std::string, DType>, KernelFactory> factories_;
};

// The dtype a node's kernel is chosen by: its op's first dtype attr.
DType KernelDType(const Node& node);

struct KernelRegistrar {
  KernelRegistrar(const std::string& op, const std::string& device_type, DType dtype,
                  KernelFactory factory) {
    KernelRegistry::Global().Register(op, device_type, dtype, std::move(factory));
  }
  template <template <typename> class K, typename... Ts>
  static KernelRegistrar ForTypes(const std::string& op, const std::string& device_type) {
    (KernelRegistry::Global().Register(op, device_type, kDTypeOf<Ts>, [](const Node& node) {
      return std::unique_ptr<OpKernel>(new K<Ts>(node));
    }), ...);
    return KernelRegistrar();
  }

 private:
  KernelRegistrar() = default;
};

#define REGISTER_KERNEL(op, device_type, KernelClass)                                 \
  [[maybe_unused]] static ::dflow::KernelRegistrar DFLOW_CONCAT(kernel_registrar_, __COUNTER__)( \
      op, device_type, ::dflow::DType::kInvalid,                                     \
      [](const ::dflow::Node& node) { return std::unique_ptr<::dflow::OpKernel>(new KernelClass(node)); })

#define REGISTER_KERNEL_FOR_TYPES(op, device_type, KernelTemplate, ...)                \
  [[maybe_unused]] static ::dflow::KernelRegistrar DFLOW_CONCAT(kernel_registrar_, __COUNTER__) = \
      ::dflow::KernelRegistrar::ForTypes<KernelTemplate, __VA_ARGS__>(op, device_type)

}  // namespace dflow

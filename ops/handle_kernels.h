// Kernels that never touch a tensor's bytes, only pass handles: a variable's
// value, an assignment of one tensor to a variable, Identity, Squeeze, a
// constant held on the host. They
// are the same on every device, so the CPU kernels (ops/cpu/) and the GPU
// module (ops/cuda/) register these classes instead of each writing its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/kernel.h"
#include "graph/resource.h"
#include "ops/array_shapes.h"

namespace dflow {

// Outputs the variable's value; leaves the output empty while it is
// uninitialised, so that an Assign can still use the variable while any
// other reader gets a clear error from the executor.
class VariableKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    std::string shared = node().attr<std::string>("shared_name");
    Variable* var = ctx.resources().LookupOrCreateVariable(
        shared.empty() ? node().name() : shared, node().attr<DType>("dtype"),
        node().attr<Shape>("shape"));
    if (var->initialized()) ctx.set_output(0, var->Read());
  }
};

// The variable keeps the assigned tensor itself (on the device it was made on).
class AssignKernel : public OpKernel {
 public:
  explicit AssignKernel(const Node& node)
      : OpKernel(node), validate_shape_(node.attr<bool>("validate_shape")) {}
  void Compute(OpKernelContext& ctx) const override {
    Variable* var = ctx.input_variable(0);
    var->Assign(ctx.input(1), validate_shape_);
    ctx.set_output(0, var->Read());
  }

 private:
  bool validate_shape_;
};

// The node's `value` attr, as it is in the graph: the CPU's Const, and
// HostConst on every device (graph/memory_types.h).
class HostConstKernel : public OpKernel {
 public:
  explicit HostConstKernel(const Node& node) : OpKernel(node), value_(node.attr<Tensor>("value")) {}
  void Compute(OpKernelContext& ctx) const override { ctx.set_output(0, value_); }

 private:
  Tensor value_;
};

class IdentityKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override { ctx.set_output(0, ctx.input(0)); }
};

// Shares the input's buffer under the squeezed shape (no copy).
class SqueezeKernel : public OpKernel {
 public:
  explicit SqueezeKernel(const Node& node)
      : OpKernel(node), dims_(node.attr<std::vector<int64_t>>("squeeze_dims")) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    ctx.set_output(0, input.Reshaped(array::SqueezeShape(input.shape(), dims_)));
  }

 private:
  std::vector<int64_t> dims_;
};

}  // namespace dflow

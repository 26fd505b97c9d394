// CPU kernels for constants, placeholders and variables.
#include "graph/kernel.h"
#include "ops/handle_kernels.h"

namespace dflow {
namespace {

class PlaceholderKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    Fail(Code::kInvalidArgument, "placeholder '", node().name(), "' (",
         DTypeName(node().output_dtype(0)), node().output_shape(0).ToString(),
         ") must be fed a value");
  }
};

// ref op= value, in place (the variable copies first if a reader shares it).
template <typename T, bool kSubtract>
class AssignUpdateKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    Variable* var = ctx.input_variable(0);
    const Tensor& delta = ctx.input(1);
    var->Update([&](Tensor& value) {
      DFLOW_REQUIRE(value.shape() == delta.shape(), node().Describe(), ": variable has shape ",
                    value.shape().ToString(), " but the update has shape ", delta.shape().ToString());
      T* v = value.data<T>();
      const T* d = delta.data<T>();
      for (int64_t i = 0; i < value.NumElements(); ++i) v[i] = kSubtract ? v[i] - d[i] : v[i] + d[i];
    });
    ctx.set_output(0, var->Read());
  }
};

template <typename T> using AssignAddKernel = AssignUpdateKernel<T, false>;
template <typename T> using AssignSubKernel = AssignUpdateKernel<T, true>;

class NoOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext&) const override {}
};

class IsVariableInitializedKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    *ctx.allocate_output(0, Shape()).data<bool>() = ctx.input_variable(0)->initialized();
  }
};

REGISTER_KERNEL("Const", "CPU", HostConstKernel);
REGISTER_KERNEL("IsVariableInitialized", "CPU", IsVariableInitializedKernel);
REGISTER_KERNEL("Placeholder", "CPU", PlaceholderKernel);
REGISTER_KERNEL("VariableV2", "CPU", VariableKernel);
REGISTER_KERNEL("Assign", "CPU", AssignKernel);
REGISTER_KERNEL_FOR_TYPES("AssignAdd", "CPU", AssignAddKernel, float, double, int32_t, int64_t,
                          int8_t, uint8_t);
REGISTER_KERNEL_FOR_TYPES("AssignSub", "CPU", AssignSubKernel, float, double, int32_t, int64_t,
                          int8_t, uint8_t);
REGISTER_KERNEL("NoOp", "CPU", NoOpKernel);

}  // namespace
}  // namespace dflow

// The two ops the executor itself uses: _Arg hands a fed value to the graph
// and _Retval hands a fetched value back. Session::Run adds them; users never
// need to.
#include "graph/kernel.h"

namespace dflow {

REGISTER_OP("_Arg")
    .output("output", "T")
    .type_attr("T", {})
    .attr<int64_t>("index")
    .attr<Shape>("shape", Shape::Unknown())
    .stateful()
    .shape_fn([](InferenceContext& ctx) { ctx.set_output(0, ctx.attr<Shape>("shape")); })
    .doc("Internal: the value fed for feed number `index` of a Run call.");

REGISTER_OP("_Retval")
    .input("input", "T")
    .type_attr("T", {})
    .attr<int64_t>("index")
    .stateful()
    .doc("Internal: returns its input as fetch number `index` of a Run call.");

class ArgKernel : public OpKernel {
 public:
  explicit ArgKernel(const Node& node) : OpKernel(node), index_(node.attr<int64_t>("index")) {}
  void Compute(OpKernelContext& ctx) const override {
    ctx.set_output(0, ctx.step().args->at(index_));
  }

 private:
  int64_t index_;
};

class RetvalKernel : public OpKernel {
 public:
  explicit RetvalKernel(const Node& node) : OpKernel(node), index_(node.attr<int64_t>("index")) {}
  void Compute(OpKernelContext& ctx) const override { ctx.step().retvals->at(index_) = ctx.input(0); }

 private:
  int64_t index_;
};

REGISTER_KERNEL("_Arg", "CPU", ArgKernel);
REGISTER_KERNEL("_Retval", "CPU", RetvalKernel);

}  // namespace dflow

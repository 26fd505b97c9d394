#include "graph/kernel.h"

#include <algorithm>
#include <mutex>
#include <shared_mutex>

#include "graph/gpu_module.h"

namespace dflow {

Variable* OpKernelContext::input_variable(int i) const {
  const Node& source = *node_.input(i).node;
  if (!source.def().is_variable)
    Fail(Code::kInvalidArgument, node_.Describe(), ": input ", i, " is not a variable");
  std::string shared = source.has_attr("shared_name") ? source.attr<std::string>("shared_name") : "";
  return resources().LookupOrCreateVariable(shared.empty() ? source.name() : shared,
                                            source.attr<DType>("dtype"), source.attr<Shape>("shape"));
}

Allocator* OpKernelContext::output_allocator(int i) const {
  return i < 64 && (host_outputs_ >> i & 1) ? device_.host_allocator() : device_.allocator();
}

Tensor& OpKernelContext::allocate_output(int i, Shape shape) {
  outputs_[i] = Tensor(node_.output_dtype(i), std::move(shape), output_allocator(i));
  return outputs_[i];
}

void OpKernelContext::set_output(int i, Tensor value) {
  if (value.dtype() != node_.output_dtype(i))
    Fail(Code::kInternal, node_.Describe(), ": output ", i, " should be ",
         DTypeName(node_.output_dtype(i)), ", kernel produced ", value.SummaryString());
  outputs_[i] = std::move(value);
}

Tensor& OpKernelContext::forward_input_or_allocate_output(int input, int output,
                                                          const Shape& shape) {
  Tensor& in = *inputs_[input];
  if (forwardable_ && forwardable_[input] && in.dtype() == node_.output_dtype(output) &&
      in.NumElements() == shape.NumElements() && in.buffer_use_count() == 1 &&
      in.allocator() == output_allocator(output) && !in.adopted()) {
    // The slot that held the input is dead after this node: take its buffer.
    // `in` still refers to the same bytes, so the kernel may read it while writing.
    outputs_[output] = in.Reshaped(shape);
    return outputs_[output];
  }
  return allocate_output(output, shape);
}

KernelRegistry& KernelRegistry::Global() {
  static KernelRegistry* registry = new KernelRegistry;
  return *registry;
}

namespace {

// Guards every registry's table. The CUDA module registers its kernels when
// it is loaded, at run time, possibly while other threads look kernels up.
// A function-level static: registrations run during static initialisation.
std::shared_mutex& RegistryMutex() {
  static std::shared_mutex* mutex = new std::shared_mutex;
  return *mutex;
}

// The GPU kernels live in the CUDA module (graph/gpu_module.h): any question
// about them loads it first, so that every caller sees the same kernels.
// Called with no registry lock held: the load registers kernels.
void LoadKernelsFor(const std::string& device_type) {
  if (device_type == "GPU") LoadGpuModule();
}

}  // namespace

void KernelRegistry::Register(const std::string& op, const std::string& device_type, DType dtype,
                              KernelFactory factory) {
  std::unique_lock lock(RegistryMutex());
  auto [it, inserted] = factories_.emplace(std::make_tuple(op, device_type, dtype), std::move(factory));
  if (!inserted)
    Fail(Code::kAlreadyExists, "kernel for ", op, " on ", device_type, " (", DTypeName(dtype),
         ") is registered twice");
}

DType KernelDType(const Node& node) {
  for (const AttrDef& attr : node.def().attrs)
    if (attr.type == AttrType::kDType) return node.attr<DType>(attr.name);
  return DType::kInvalid;
}

std::unique_ptr<OpKernel> KernelRegistry::Create(const Node& node,
                                                 const std::string& device_type) const {
  LoadKernelsFor(device_type);
  DType dtype = KernelDType(node);
  const KernelFactory* factory = nullptr;
  {
    std::shared_lock lock(RegistryMutex());
    auto it = factories_.find({node.op(), device_type, dtype});
    if (it == factories_.end()) it = factories_.find({node.op(), device_type, DType::kInvalid});
    if (it != factories_.end()) factory = &it->second;  // entries are never removed
  }
  if (!factory) {
    std::string have;
    for (DType t : RegisteredTypes(node.op(), device_type))
      have += StrCat(have.empty() ? "" : ", ", t == DType::kInvalid ? "any" : DTypeName(t));
    Fail(Code::kUnimplemented, node.Describe(), ": no ", device_type, " kernel for dtype ",
         DTypeName(dtype), have.empty() ? " (no kernels at all)" : " (registered: " + have + ")");
  }
  return (*factory)(node);
}

bool KernelRegistry::Has(const std::string& op, const std::string& device_type) const {
  return !RegisteredTypes(op, device_type).empty();
}

bool KernelRegistry::HasFor(const Node& node, const std::string& device_type) const {
  std::vector<DType> types = RegisteredTypes(node.op(), device_type);
  return std::find(types.begin(), types.end(), DType::kInvalid) != types.end() ||
         std::find(types.begin(), types.end(), KernelDType(node)) != types.end();
}

std::vector<DType> KernelRegistry::RegisteredTypes(const std::string& op,
                                                   const std::string& device_type) const {
  LoadKernelsFor(device_type);
  std::shared_lock lock(RegistryMutex());
  std::vector<DType> types;
  for (auto it = factories_.lower_bound({op, device_type, DType::kInvalid});
       it != factories_.end() && std::get<0>(it->first) == op && std::get<1>(it->first) == device_type;
       ++it)
    types.push_back(std::get<2>(it->first));
  return types;
}

std::vector<std::string> KernelRegistry::DeviceTypesWithKernels(const std::string& op) const {
  LoadKernelsFor("GPU");
  std::shared_lock lock(RegistryMutex());
  std::vector<std::string> types;
  for (auto it = factories_.lower_bound({op, std::string(), DType::kInvalid});
       it != factories_.end() && std::get<0>(it->first) == op; ++it)
    if (types.empty() || types.back() != std::get<1>(it->first)) types.push_back(std::get<1>(it->first));
  return types;
}

}  // namespace dflow

namespace dflow {

void AsyncOpKernel::Compute(OpKernelContext& ctx) const {
  Fail(Code::kInternal, node().Describe(), " is asynchronous: run it with ComputeAsync");
}

}  // namespace dflow

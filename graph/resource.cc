#include "graph/resource.h"

namespace dflow {

bool Variable::initialized() const {
  std::lock_guard<std::mutex> lock(mu_);
  return value_.valid();
}

void Variable::RequireInitialized() const {
  if (!value_.valid())
    Fail(Code::kFailedPrecondition, "variable '", name_,
         "' is uninitialised: run its initializer (an Assign) first");
}

Tensor Variable::Read() const {
  std::lock_guard<std::mutex> lock(mu_);
  RequireInitialized();
  return value_;
}

void Variable::Assign(Tensor value, bool validate_shape) {
  if (value.dtype() != dtype_)
    Fail(Code::kInvalidArgument, "variable '", name_, "' is ", DTypeName(dtype_),
         ", cannot assign ", value.SummaryString());
  if (validate_shape && !shape_.IsCompatibleWith(value.shape()))
    Fail(Code::kInvalidArgument, "variable '", name_, "' has shape ", shape_.ToString(),
         ", cannot assign ", value.SummaryString(), " (set validate_shape=false to allow)");
  // A variable is updated in place, and in-place kernels are only ever given
  // allocator memory: a value over received bytes is copied once, here.
  if (value.adopted()) value = value.Clone();
  std::lock_guard<std::mutex> lock(mu_);
  value_ = std::move(value);
}

Variable* ResourceStore::LookupOrCreateVariable(const std::string& name, DType dtype,
                                                const Shape& shape) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = variables_[name];
  if (!slot) slot = std::make_unique<Variable>(name, dtype, shape);
  if (slot->dtype() != dtype)
    Fail(Code::kInvalidArgument, "variable '", name, "' exists with dtype ",
         DTypeName(slot->dtype()), ", requested ", DTypeName(dtype));
  return slot.get();
}

Variable* ResourceStore::FindVariable(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = variables_.find(name);
  return it == variables_.end() ? nullptr : it->second.get();
}

std::vector<std::string> ResourceStore::VariableNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, var] : variables_) names.push_back(name);
  return names;
}

uint64_t ResourceStore::NextCounter(const std::string& name, uint64_t delta) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t& counter = counters_[name];
  uint64_t value = counter;
  counter += delta;
  return value;
}

void ResourceStore::Clear() {
  std::map<std::string, std::unique_ptr<Variable>> variables;
  std::map<std::string, std::shared_ptr<Resource>> resources;
  {
    std::lock_guard<std::mutex> lock(mu_);
    variables.swap(variables_);
    resources.swap(resources_);
    counters_.clear();
  }
}  // destroyed here, outside the lock

}  // namespace dflow

// State that outlives a step: variables, per-node counters (random ops) and
// other named resources (a parameter server's gradient accumulators), owned
// by the session (or a worker task) and shared by all its executors.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <typeinfo>

#include "graph/tensor.h"

namespace dflow {

// A variable's value. Readers get a Tensor that shares the buffer; a writer
// that finds the buffer shared copies it first (copy-on-write), so a value a
// reader already holds never changes under it.
class Variable {
 public:
  Variable(std::string name, DType dtype, Shape shape)
      : name_(std::move(name)), dtype_(dtype), shape_(std::move(shape)) {}

  const std::string& name() const { return name_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }  // declared (may be partial)

  bool initialized() const;
  // The current value; throws kFailedPrecondition when uninitialised.
  Tensor Read() const;
  // Replaces the value (checks dtype; and shape when validate_shape).
  void Assign(Tensor value, bool validate_shape = true);
  // Runs update(value) on a buffer no reader shares, under the variable's lock.
  template <typename Fn>
  void Update(Fn&& update) {
    std::lock_guard<std::mutex> lock(mu_);
    RequireInitialized();
    // Never in place over shared bytes, nor over adopted ones (a numpy
    // array fed from Python, a received frame): they belong to someone else.
    if (value_.buffer_use_count() > 1 || value_.adopted()) value_ = value_.Clone(value_.allocator());
    update(value_);
  }

 private:
  void RequireInitialized() const;

  std::string name_;
  DType dtype_;
  Shape shape_;
  mutable std::mutex mu_;
  Tensor value_;
};

// Anything else a store can hold by name: the store only keeps it alive.
class Resource {
 public:
  virtual ~Resource() = default;
};

class ResourceStore {
 public:
  // The variable called `name`, created on first use; a later call with a
  // different dtype throws.
  Variable* LookupOrCreateVariable(const std::string& name, DType dtype, const Shape& shape);
  Variable* FindVariable(const std::string& name) const;  // null when absent
  std::vector<std::string> VariableNames() const;

  // A per-name counter that increases by `delta` on each call; random ops use
  // it so that each run draws new numbers and the sequence is reproducible.
  uint64_t NextCounter(const std::string& name, uint64_t delta);

  // Drops every variable and resource (their tensors with them).
  void Clear();

  // The resource of type T called `name`, made by create() on first use;
  // throws kInvalidArgument when `name` holds a resource of another type.
  template <typename T, typename Create>
  std::shared_ptr<T> LookupOrCreate(const std::string& name, Create&& create) {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<Resource>& slot = resources_[name];
    if (!slot) slot = create();
    auto typed = std::dynamic_pointer_cast<T>(slot);
    if (!typed)
      Fail(Code::kInvalidArgument, "resource '", name, "' exists with another type than ",
           typeid(T).name());
    return typed;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Variable>> variables_;
  std::map<std::string, uint64_t> counters_;
  std::map<std::string, std::shared_ptr<Resource>> resources_;
};

}  // namespace dflow

// The C++ builder API. A Scope says where the next node goes (graph, name
// prefix, device, control dependencies); the typed builder functions in ops/
// take a Scope and Inputs and return Outputs:
//
//   Scope s = Scope::NewRootScope();
//   auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1, 3});
//   auto y = ops::Relu(s.WithOpName("y"), ops::MatMul(s, x, w));
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace dflow {

// A handle to one output of a node.
class Output {
 public:
  Output() = default;
  Output(Node* node, int index = 0) : node_(node), index_(index) {}  // NOLINT
  Output(NodeOut out) : node_(out.node), index_(out.index) {}        // NOLINT

  // False for a default-constructed Output (autodiff's "no gradient").
  bool valid() const { return node_ != nullptr; }
  Node* node() const { return node_; }
  int index() const { return index_; }
  DType dtype() const { return node_->output_dtype(index_); }
  const Shape& shape() const { return node_->output_shape(index_); }
  std::string name() const { return NodeOut{node_, index_}.name(); }
  operator NodeOut() const { return {node_, index_}; }  // NOLINT

 private:
  Node* node_ = nullptr;
  int index_ = 0;
};

class Scope;

// What builder functions accept: an Output, or a literal value that becomes
// a Const node. A literal scalar or list takes the dtype of the op's other
// operands where the builder knows it (ops::Mul(x64, 2.0) multiplies by a
// float64 2).
class Input {
 public:
  Input(const Output& output) : output_(output) {}  // NOLINT
  Input(Node* node) : output_(node) {}              // NOLINT
  Input(const Tensor& value) : literal_(value) {}   // NOLINT
  Input(float v) : literal_(Tensor::Scalar(v)) {}   // NOLINT
  Input(double v) : literal_(Tensor::Scalar(v)) {}  // NOLINT
  Input(int v) : literal_(Tensor::Scalar<int32_t>(v)) {}       // NOLINT
  Input(int64_t v) : literal_(Tensor::Scalar<int64_t>(v)) {}   // NOLINT
  Input(bool v) : literal_(Tensor::Scalar(v)) {}               // NOLINT
  Input(std::initializer_list<float> v) : literal_(Tensor::FromVector(std::vector<float>(v))) {}
  Input(std::initializer_list<double> v) : literal_(Tensor::FromVector(std::vector<double>(v))) {}
  Input(std::initializer_list<int> v);
  Input(std::initializer_list<int64_t> v) : literal_(Tensor::FromVector(std::vector<int64_t>(v))) {}

  bool is_literal() const { return literal_.valid(); }
  const Tensor& literal() const { return literal_; }
  // The Output, creating a Const for a literal; `like` (when valid) is the
  // dtype a numeric literal is converted to.
  Output ToOutput(const Scope& scope, DType like = DType::kInvalid) const;

 private:
  Output output_;
  Tensor literal_;
};

class Scope {
 public:
  static Scope NewRootScope();
  // A scope over an existing graph (for example one loaded from a file).
  static Scope ForGraph(std::shared_ptr<Graph> graph);

  // The next node gets exactly this name (under the name-scope prefix).
  Scope WithOpName(std::string name) const;
  // Names of nodes made through the result start with "<prefix>/name/"
  // ("name_1/" and so on when an earlier sub-scope or node took the name).
  Scope NewSubScope(std::string name) const;
  Scope WithDevice(std::string device) const;
  Scope WithControlDependencies(std::vector<Output> deps) const;

  Graph& graph() const { return *graph_; }
  const std::shared_ptr<Graph>& graph_ptr() const { return graph_; }
  const std::string& device() const { return device_; }

  // Adds a node of `op` with this scope's name, device and control
  // dependencies. Literal inputs become Consts of the dtype of the first
  // non-literal input (or their own).
  Node* AddOp(std::string_view op, const std::vector<Input>& inputs, AttrMap attrs = {}) const;
  // The name the next node of `op` would get.
  std::string NodeName(std::string_view op) const;

 private:
  std::shared_ptr<Graph> graph_;
  std::string prefix_;    // "outer/inner/" or ""
  std::string op_name_;   // set by WithOpName
  std::string device_;
  std::vector<Node*> control_deps_;
};

}  // namespace dflow

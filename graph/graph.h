// The graph IR: nodes (unique name, op, typed attrs, data inputs as
// (node, output index), control inputs, requested device) owned by a Graph.
// Adding a node checks it against its OpDef at once: input count and dtypes,
// attrs (filled with defaults), and runs the op's shape function, so a
// mistake is reported where it is made, naming the node, op and shapes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/attr.h"
#include "graph/op_def.h"

namespace dflow {

class Node;

// One output of a node: "name:index" (":0" may be left out).
struct NodeOut {
  Node* node = nullptr;
  int index = 0;
  std::string name() const;
  bool operator==(const NodeOut& other) const = default;
};

// What AddNode needs to create a node: name and op always; the other members
// default to empty (their `{}` lets an initialiser leave them out without
// -Wmissing-field-initializers).
struct NodeSpec {
  std::string name;
  std::string op;
  std::vector<NodeOut> inputs{};
  std::vector<Node*> control_inputs{};
  AttrMap attrs{};
  std::string device{};  // requested device; empty = let placement decide
};

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const std::string& op() const { return def_->name; }
  const OpDef& def() const { return *def_; }

  const AttrMap& attrs() const { return attrs_; }
  bool has_attr(std::string_view attr_name) const { return attrs_.count(attr_name) != 0; }
  template <typename T>
  T attr(std::string_view attr_name) const {
    auto it = attrs_.find(attr_name);
    if (it == attrs_.end())
      Fail(Code::kNotFound, "node '", name_, "' (", op(), ") has no attr '", attr_name, "'");
    return GetAttr<T>(it->second, attr_name);
  }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const NodeOut& input(int i) const { return inputs_.at(i); }
  const std::vector<NodeOut>& inputs() const { return inputs_; }
  DType input_dtype(int i) const;
  const Shape& input_shape(int i) const;
  const std::vector<Node*>& control_inputs() const { return control_inputs_; }
  // Index range [first, last) of the flattened inputs of a list arg (AddN's "inputs").
  std::pair<int, int> InputRange(std::string_view arg_name) const;
  // Does flattened input i belong to a ref arg (one that names a variable)?
  bool IsRefInput(int i) const;

  int num_outputs() const { return static_cast<int>(output_dtypes_.size()); }
  DType output_dtype(int i) const { return output_dtypes_.at(i); }
  const Shape& output_shape(int i) const { return output_shapes_.at(i); }

  const std::string& requested_device() const { return requested_device_; }
  // For device-setting passes (dist::AssignReplicaDevices) that run after building.
  void set_requested_device(std::string device) { requested_device_ = std::move(device); }
  const std::string& assigned_device() const { return assigned_device_; }
  void set_assigned_device(std::string device) { assigned_device_ = std::move(device); }

  // "MatMul 'dense/mm'"
  std::string Describe() const { return op() + " '" + name_ + "'"; }

 private:
  friend class Graph;
  int id_ = -1;
  std::string name_;
  const OpDef* def_ = nullptr;
  AttrMap attrs_;
  std::vector<NodeOut> inputs_;
  std::vector<Node*> control_inputs_;
  std::vector<DType> output_dtypes_;
  std::vector<Shape> output_shapes_;
  std::string requested_device_;
  std::string assigned_device_;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Validates the spec against the op registry and adds the node; throws an
  // Error naming the node and op on any mismatch.
  Node* AddNode(NodeSpec spec);
  // Removes a node that nothing consumes any more (for graph passes).
  void RemoveNode(Node* node);
  // Gives `node` a name no other node has (for graph passes: a node that
  // replaces others takes the replaced one's name, so traces still show it).
  void RenameNode(Node* node, std::string name);
  // Rewires input i of `node` (for graph passes); dtypes must match.
  void UpdateInput(Node* node, int i, NodeOut source);
  void AddControlInput(Node* node, Node* source);
  // Points every data and control use of `old_node` (listed in `consumers`,
  // from Consumers()) at `replacement`, output for output.
  struct Consumer;
  void ReplaceUses(Node* old_node, Node* replacement, const std::vector<Consumer>& consumers);

  Node* FindNode(std::string_view name) const;  // null when absent
  Node& GetNode(std::string_view name) const;   // throws kNotFound
  // Parses "name", "name:1" or "^name" (a control reference: index -1).
  NodeOut ParseOutput(std::string_view tensor_name) const;

  // All live nodes in creation order.
  std::vector<Node*> nodes() const;
  int num_nodes() const { return num_live_; }
  // Upper bound of node ids, for id-indexed side tables.
  int id_bound() const { return static_cast<int>(nodes_.size()); }
  Node* node_by_id(int id) const { return nodes_.at(id).get(); }

  // Inputs before consumers; throws naming the nodes on a cycle.
  std::vector<Node*> TopologicalOrder() const;
  // Re-checks every invariant (inputs exist, dtypes, no cycles).
  void Validate() const;

  // A name not yet used: `base`, else `base_1`, `base_2`, ...
  std::string UniqueName(std::string_view base) const;
  // Like UniqueName, also avoiding (and then reserving) the names of earlier
  // sub-scopes, so two NewSubScope("dense") calls give "dense" and "dense_1".
  std::string UniqueScopeName(std::string_view base);

  // Graph-level random seed (TensorFlow's tf.set_random_seed); 0 = unset.
  int64_t seed() const { return seed_; }
  void set_seed(int64_t seed) { seed_ = seed; }

  // Free-form key -> text that travels with the graph through its file,
  // copies and freezing (ONNX's metadata_props): what a program needs to
  // use a graph file, e.g. a detector's classes and input size.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  void set_metadata(const std::string& key, std::string value) { metadata_[key] = std::move(value); }

  // Consumers of each node (by id), each with the input slot that uses it;
  // control edges appear with slot -1.
  struct Consumer { Node* node; int input; };
  std::vector<std::vector<Consumer>> Consumers() const;

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unordered_map<std::string, Node*> by_name_;
  std::unordered_set<std::string> scope_names_;
  int num_live_ = 0;
  int64_t seed_ = 0;
  std::map<std::string, std::string> metadata_;
};

// Runs the op's shape function for `node` with the inputs it has now; used by
// AddNode and by passes that rewire inputs.
std::vector<Shape> InferOutputShapes(const OpDef& def, const AttrMap& attrs,
                                     const std::vector<NodeOut>& inputs, int num_outputs);

// The value of a node output when known while building (Const, folded shapes).
std::optional<Tensor> KnownValue(const NodeOut& out);

}  // namespace dflow

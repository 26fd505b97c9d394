// Op declarations: each op is declared once, with its inputs, outputs, typed
// attrs (with defaults and dtype constraints), shape function and doc:
//
//   REGISTER_OP("MatMul")
//       .input("a", "T").input("b", "T").output("product", "T")
//       .attr<bool>("transpose_a", false).attr<bool>("transpose_b", false)
//       .type_attr("T", kNumberTypes)
//       .shape_fn(MatMulShape)
//       .doc("Matrix product of two rank-2 tensors.");
//
// The registry maps op names to these declarations; graph building, the graph
// file loader, the executor and `dflow ops` all read it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/attr.h"

namespace dflow {

class Node;

// One input or output argument of an op.
struct ArgDef {
  std::string name;
  DType fixed_type = DType::kInvalid;  // set: the arg always has this dtype
  std::string type_attr{};             // else: its dtype is this attr ("T")
  std::string number_attr{};           // set: a list of N tensors, N in this attr
  bool is_ref = false;                 // input that must come from a variable (Assign)
};

struct AttrDef {
  std::string name;
  AttrType type;
  std::optional<AttrValue> default_value{};  // none: the attr is required
  std::vector<DType> allowed_types{};        // for dtype attrs; empty = any
};

class InferenceContext;
using ShapeFn = std::function<void(InferenceContext&)>;
// Returns an op's output 0 when it is known while building (Const's value,
// Shape of a fully known input); used by shape inference and folding.
using ValueFn = std::function<std::optional<Tensor>(const Node&)>;

struct OpDef {
  std::string name;
  std::vector<ArgDef> inputs;
  std::vector<ArgDef> outputs;
  std::vector<AttrDef> attrs;
  ShapeFn shape_fn;
  ValueFn value_fn;
  std::string doc;
  bool is_stateful = false;  // reads or writes state, or random: never folded or merged
  bool is_variable = false;  // owns a variable: ref inputs must come from such an op
  // Its inputs broadcast against each other like numpy arrays (Add, Select,
  // BatchMatMul's batch dims), so an input may be smaller than the output.
  bool broadcasts = false;

  const AttrDef* FindAttr(std::string_view attr_name) const;
  // "MatMul(a: T, b: T) -> (product: T)"
  std::string Signature() const;
};

class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string name);

  OpDefBuilder& input(std::string name, std::string type_attr);
  OpDefBuilder& input(std::string name, DType fixed_type);
  OpDefBuilder& input_list(std::string name, std::string type_attr, std::string number_attr);
  OpDefBuilder& ref_input(std::string name, std::string type_attr);
  OpDefBuilder& output(std::string name, std::string type_attr);
  OpDefBuilder& output(std::string name, DType fixed_type);
  OpDefBuilder& output_list(std::string name, std::string type_attr, std::string number_attr);

  template <typename T>
  OpDefBuilder& attr(std::string name, T default_value) {
    return add_attr(std::move(name), AttrTypeOf<T>::value, MakeAttr(default_value));
  }
  template <typename T>
  OpDefBuilder& attr(std::string name) {  // required
    return add_attr(std::move(name), AttrTypeOf<T>::value, std::nullopt);
  }
  // A dtype attr restricted to `allowed` (empty: any dtype); inferred from
  // the inputs that use it when the caller does not set it.
  OpDefBuilder& type_attr(std::string name, std::vector<DType> allowed,
                          std::optional<DType> default_value = std::nullopt);

  OpDefBuilder& shape_fn(ShapeFn fn);
  OpDefBuilder& value_fn(ValueFn fn);
  OpDefBuilder& stateful();
  OpDefBuilder& variable();
  OpDefBuilder& broadcasting();
  OpDefBuilder& doc(std::string text);

  OpDef Build() &&;

 private:
  OpDefBuilder& add_attr(std::string name, AttrType type, std::optional<AttrValue> default_value);
  OpDef def_;
};

class OpRegistry {
 public:
  static OpRegistry& Global();
  void Register(OpDef def);                      // throws on a duplicate name
  const OpDef* Find(std::string_view name) const;  // null when unknown
  const OpDef& Get(std::string_view name) const;   // throws kNotFound
  std::vector<const OpDef*> All() const;           // sorted by name

 private:
  std::map<std::string, std::unique_ptr<OpDef>, std::less<>> ops_;
};

struct OpRegistrar {
  OpRegistrar(OpDefBuilder& builder);  // NOLINT: implicit, for the macro
  OpRegistrar(OpDefBuilder&& builder);  // NOLINT
};

#define DFLOW_CONCAT_INNER(a, b) a##b
#define DFLOW_CONCAT(a, b) DFLOW_CONCAT_INNER(a, b)
#define REGISTER_OP(name)                                                 \
  [[maybe_unused]] static ::dflow::OpRegistrar DFLOW_CONCAT(op_registrar_, __COUNTER__) = \
      ::dflow::OpDefBuilder(name)

// Common dtype sets. Each list is one function-local static inside
// libdflow (built on first use, never destroyed); the inline references give
// it a short name, and are initialised before any later static in each file
// that includes this header, so REGISTER_OP may read them at start-up.
// (Inline *vectors* would be built and destroyed twice, once by the library
// and once by each program that includes this header.)
const std::vector<DType>& FloatTypes();   // float32, float64
const std::vector<DType>& NumberTypes();  // float32, float64, int32, int64
const std::vector<DType>& RealTypes();    // every numeric dtype (no bool)
const std::vector<DType>& IndexTypes();   // int32, int64
inline const std::vector<DType>& kFloatTypes = FloatTypes();
inline const std::vector<DType>& kNumberTypes = NumberTypes();
inline const std::vector<DType>& kRealTypes = RealTypes();
inline const std::vector<DType>& kIndexTypes = IndexTypes();

// What a shape function sees: input dtypes, (partial) shapes and, where
// known while building, input values; the node's attrs. It sets the output
// shapes (unset outputs stay of unknown shape) and reports a bad input with
// Fail(), which the graph turns into "Op 'node': message".
class InferenceContext {
 public:
  InferenceContext(const OpDef& def, const AttrMap& attrs, std::vector<DType> input_dtypes,
                   std::vector<Shape> input_shapes, std::vector<std::optional<Tensor>> input_values,
                   int num_outputs);

  int num_inputs() const { return static_cast<int>(input_shapes_.size()); }
  int num_outputs() const { return static_cast<int>(output_shapes_.size()); }
  const Shape& input_shape(int i) const { return input_shapes_.at(i); }
  DType input_dtype(int i) const { return input_dtypes_.at(i); }
  // The input's value when it is known while building, else null.
  const Tensor* input_value(int i) const;
  // Reads an int32/int64 input as a shape: its value when known; otherwise, a
  // vector input of known length k gives rank k with unknown dims.
  Shape input_as_shape(int i) const;
  // Reads an int input (scalar or vector) when known.
  std::optional<std::vector<int64_t>> input_as_ints(int i) const;

  template <typename T>
  T attr(std::string_view name) const {
    auto it = attrs_.find(name);
    if (it == attrs_.end()) ::dflow::Fail(Code::kInternal, "shape function reads missing attr '", name, "'");
    return GetAttr<T>(it->second, name);
  }

  void set_output(int i, Shape shape) { output_shapes_.at(i) = std::move(shape); }
  const std::vector<Shape>& output_shapes() const { return output_shapes_; }

  template <typename... Args>
  [[noreturn]] void Fail(const Args&... args) const {
    ::dflow::Fail(Code::kInvalidArgument, args...);
  }

 private:
  const OpDef& def_;
  const AttrMap& attrs_;
  std::vector<DType> input_dtypes_;
  std::vector<Shape> input_shapes_;
  std::vector<std::optional<Tensor>> input_values_;
  std::vector<Shape> output_shapes_;
};

// Shape functions shared by many ops.
void UnchangedShape(InferenceContext& ctx);      // output 0 has input 0's shape
void ScalarShape(InferenceContext& ctx);         // every output is a scalar
void BroadcastBinaryShape(InferenceContext& ctx);  // numpy broadcast of inputs 0 and 1
// numpy broadcasting of two partial shapes; throws naming both when they clash.
Shape BroadcastShapes(const Shape& a, const Shape& b);

}  // namespace dflow

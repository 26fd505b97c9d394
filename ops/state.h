// Builders for constants, placeholders and variables (TensorFlow-1 style:
// a variable is a node; Assign/AssignAdd/AssignSub change its value).
#pragma once

#include "graph/scope.h"

namespace dflow::ops {

// A constant tensor (a literal Input is converted the same way).
Output Const(const Scope& scope, const Input& value);
// A value that must be fed at Run time; `shape` may have -1 dims. (The type
// is spelled dflow::Shape because ops::Shape, the op builder, hides it here.)
Output Placeholder(const Scope& scope, DType dtype, dflow::Shape shape = dflow::Shape::Unknown());
// A variable that keeps its value across Run calls (TensorFlow's VariableV2).
Output Variable(const Scope& scope, dflow::Shape shape, DType dtype);

// A variable that starts as `initial_value` (TensorFlow's tf.Variable): a
// VariableV2 of the value's (fully known) shape and dtype, named by the
// scope, plus an Assign named "<variable>/init" that GlobalVariablesInitializer
// runs. The initial value may be computed (a random initialiser).
Output Variable(const Scope& scope, const Input& initial_value);
// A NoOp that runs every "<variable>/init" Assign in the graph: run it once
// as a target before training.
Node* GlobalVariablesInitializer(const Scope& scope);

struct AssignAttrs {
  bool validate_shape = true;  // the value must have the variable's shape
  bool use_locking = true;
};
Output Assign(const Scope& scope, const Output& ref, const Input& value, AssignAttrs attrs = {});
Output AssignAdd(const Scope& scope, const Output& ref, const Input& value);
Output AssignSub(const Scope& scope, const Output& ref, const Input& value);
// A bool scalar: has the variable been assigned yet? (Runs on its device.)
Output IsVariableInitialized(const Scope& scope, const Output& ref);
// Does nothing; groups control dependencies ("init", "train").
Node* NoOp(const Scope& scope);

}  // namespace dflow::ops

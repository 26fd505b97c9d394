// The C++ builders of ops/*.h (`Output ops::MatMul(const Scope& scope, ...)`)
// and their attrs structs, as `dflow ops` shows them beside each op. The
// table is written at build time from the headers (builder_signatures.py).
#pragma once

#include <string>
#include <vector>

namespace dflow::cli {

struct BuilderSignature {
  const char* name;       // the builder's name, the op's as a rule ("Variable" builds VariableV2)
  const char* signature;  // "Output ops::MatMul(const Scope& scope, const Input& a, ...)"
  const char* header;     // "ops/linalg.h"
};

// The builders of op `op`: those named like it, else like it without a
// version suffix ("VariableV2" -> "Variable"); empty when it has none.
std::vector<BuilderSignature> BuildersOf(const std::string& op);
// The fields of an attrs struct (`MatMulAttrs`), one declaration each; empty
// when there is no such struct.
std::vector<std::string> AttrsStructFields(const std::string& name);

}  // namespace dflow::cli

// The op and kernel registries as the library fills them. This program links
// only libdflow (no test files that register ops of their own), so "every op"
// means every op a user of the library can build.
#include <algorithm>
#include <set>

#include <catch2/catch.hpp>

#include "graph/kernel.h"
#include "graph/op_def.h"

using namespace dflow;

namespace {

// Runs fn and checks it throws dflow::Error with `code` and `substring`.
template <typename Fn>
void ExpectError(Fn fn, Code code, const std::string& substring) {
  try {
    fn();
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.code() == code);
    CHECK(std::string(e.what()).find(substring) != std::string::npos);
    return;
  }
  FAIL("expected an error with '" << substring << "'");
}

}  // namespace

// Ops whose kernels do not exist yet, each with where they will come from.
// (None now; keep the list for the next op that lands before its kernel.)
const std::set<std::string> kNoKernelYet = {};

TEST_CASE("every op has a CPU kernel and a doc string", "[core]") {
  std::vector<const OpDef*> all = OpRegistry::Global().All();
  CHECK(all.size() > 50);
  for (const OpDef* def : all) {
    INFO(def->name);
    CHECK_FALSE(def->doc.empty());
    if (def->name == "_Arg" || def->name == "_Retval") continue;
    CHECK(KernelRegistry::Global().Has(def->name, "CPU") != kNoKernelYet.count(def->name));
  }
  CHECK(std::is_sorted(all.begin(), all.end(),
                       [](const OpDef* a, const OpDef* b) { return a->name < b->name; }));
  ExpectError([] { OpRegistry::Global().Get("Nope"); }, Code::kNotFound, "unknown op 'Nope'");
  ExpectError(
      [] {
        OpDefBuilder builder("NoOp");
        OpRegistry::Global().Register(std::move(builder.doc("again")).Build());
      },
      Code::kAlreadyExists, "op 'NoOp' is registered twice");
  ExpectError([] { std::move(OpDefBuilder("Broken").input("x", "T")).Build(); }, Code::kInternal,
              "undeclared type attr 'T'");
  CHECK(KernelRegistry::Global().RegisteredTypes("Const", "CPU") == std::vector<DType>{DType::kInvalid});
  CHECK_FALSE(KernelRegistry::Global().Has("Const", "TPU"));
}

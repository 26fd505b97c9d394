#include "apps/dflow/builder_signatures.h"

#include <regex>

namespace dflow::cli {
namespace {

struct AttrsStruct {
  const char* name;
  std::vector<const char*> fields;
};

#include "builder_signatures.inc"

std::vector<BuilderSignature> Named(const std::string& name) {
  std::vector<BuilderSignature> found;
  for (const BuilderSignature& builder : kBuilderSignatures)
    if (name == builder.name) found.push_back(builder);
  return found;
}

}  // namespace

std::vector<BuilderSignature> BuildersOf(const std::string& op) {
  std::vector<BuilderSignature> found = Named(op);
  if (!found.empty()) return found;
  static const std::regex version_suffix("V[0-9]+$");
  std::string unversioned = std::regex_replace(op, version_suffix, "");
  return unversioned == op ? found : Named(unversioned);
}

std::vector<std::string> AttrsStructFields(const std::string& name) {
  for (const AttrsStruct& attrs : kAttrsStructs)
    if (name == attrs.name) return {attrs.fields.begin(), attrs.fields.end()};
  return {};
}

}  // namespace dflow::cli

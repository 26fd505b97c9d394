#include "apps/dflow/builder_signatures.h"

#include <regex>
#include <utility>

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

// Ops whose builder is named after another op of its family: the builder's
// attrs choose which one it adds.
constexpr std::pair<const char*, const char*> kFamilyBuilders[] = {
    {"QuantizedConv2DWithBiasAndReluAndRequantize", "QuantizedConv2DWithBiasAndRequantize"},
    {"QuantizedDepthwiseConv2DWithBiasAndRequantize", "QuantizedConv2DWithBiasAndRequantize"},
    {"QuantizedDepthwiseConv2DWithBiasAndReluAndRequantize", "QuantizedConv2DWithBiasAndRequantize"},
};

}  // namespace

std::vector<BuilderSignature> BuildersOf(const std::string& op) {
  std::vector<BuilderSignature> found = Named(op);
  if (!found.empty()) return found;
  for (const auto& [member, builder] : kFamilyBuilders)
    if (op == member) return Named(builder);
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

// `dflow ops`: the op registry as text or JSON (signature, attrs with types,
// defaults and allowed dtypes, flags, whether it has a gradient, doc), with
// the C++ builders of ops/ that add each op (builder_signatures.h).
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include <regex>

#include "apps/dflow/builder_signatures.h"
#include "apps/dflow/commands.h"
#include "autodiff/gradients.h"
#include "graph/graph_io.h"
#include "graph/op_def.h"

namespace dflow::cli {
namespace {

using Json = nlohmann::ordered_json;

std::string DTypeList(const std::vector<DType>& dtypes) {
  std::string out;
  for (DType t : dtypes) out += (out.empty() ? "" : ", ") + std::string(DTypeName(t));
  return out;
}

Json ArgsToJson(const std::vector<ArgDef>& args) {
  Json out = Json::array();
  for (const ArgDef& arg : args) {
    Json a{{"name", arg.name},
           {"type", arg.fixed_type != DType::kInvalid ? std::string(DTypeName(arg.fixed_type))
                                                      : arg.type_attr}};
    if (!arg.number_attr.empty()) a["number_attr"] = arg.number_attr;
    if (arg.is_ref) a["ref"] = true;
    out.push_back(std::move(a));
  }
  return out;
}

// The attrs structs a builder takes (`MatMulAttrs attrs = {}`), in order.
std::vector<std::string> AttrsStructsOf(const std::string& signature) {
  static const std::regex attrs_struct(R"(\b(\w+Attrs)\b)");
  std::vector<std::string> names;
  for (auto it = std::sregex_iterator(signature.begin(), signature.end(), attrs_struct); it != std::sregex_iterator();
       ++it)
    if (std::find(names.begin(), names.end(), (*it)[1].str()) == names.end()) names.push_back((*it)[1].str());
  return names;
}

Json BuildersToJson(const std::string& op) {
  Json out = Json::array();
  for (const BuilderSignature& builder : BuildersOf(op)) {
    Json structs = Json::object();
    for (const std::string& name : AttrsStructsOf(builder.signature)) structs[name] = AttrsStructFields(name);
    out.push_back({{"signature", builder.signature}, {"header", builder.header}, {"attrs_structs", structs}});
  }
  return out;
}

// "C++: Output ops::MatMul(...)  [ops/linalg.h]" and the attrs structs it takes.
void PrintBuilders(const OpDef& def) {
  std::vector<BuilderSignature> builders = BuildersOf(def.name);
  if (builders.empty()) {
    std::cout << "    C++: no builder in ops/; Scope::AddOp(\"" << def.name << "\", inputs, attrs) adds it\n";
    return;
  }
  std::vector<std::string> printed;
  for (const BuilderSignature& builder : builders) {
    std::cout << "    C++: " << builder.signature << "  [" << builder.header << "]\n";
    for (const std::string& name : AttrsStructsOf(builder.signature)) {
      if (std::find(printed.begin(), printed.end(), name) != printed.end()) continue;
      printed.push_back(name);
      std::cout << "         struct " << name << " {\n";
      for (const std::string& field : AttrsStructFields(name)) std::cout << "           " << field << "\n";
      std::cout << "         };\n";
    }
  }
}

Json OpToJson(const OpDef& def) {
  Json attrs = Json::array();
  for (const AttrDef& attr : def.attrs) {
    Json a{{"name", attr.name}, {"type", std::string(AttrTypeName(attr.type))}};
    if (attr.default_value) a["default"] = AttrToJson(*attr.default_value);
    if (!attr.allowed_types.empty()) {
      a["allowed"] = Json::array();
      for (DType t : attr.allowed_types) a["allowed"].push_back(std::string(DTypeName(t)));
    }
    attrs.push_back(std::move(a));
  }
  return Json{{"name", def.name},
              {"signature", def.Signature()},
              {"inputs", ArgsToJson(def.inputs)},
              {"outputs", ArgsToJson(def.outputs)},
              {"attrs", std::move(attrs)},
              {"stateful", def.is_stateful},
              {"variable", def.is_variable},
              {"broadcasts", def.broadcasts},
              {"gradient", autodiff::GradientRegistry::Global().HasGradient(def.name)},
              {"cpp_builders", BuildersToJson(def.name)},
              {"doc", def.doc}};
}

void PrintOp(const OpDef& def) {
  std::cout << def.Signature() << "\n";
  if (!def.doc.empty()) std::cout << "    " << def.doc << "\n";
  for (const AttrDef& attr : def.attrs) {
    std::cout << "    attr " << attr.name << ": " << AttrTypeName(attr.type);
    if (!attr.allowed_types.empty()) std::cout << " in {" << DTypeList(attr.allowed_types) << "}";
    if (attr.default_value) std::cout << " = " << AttrToJson(*attr.default_value).dump();
    std::cout << "\n";
  }
  std::cout << "    gradient: "
            << (autodiff::GradientRegistry::Global().HasGradient(def.name) ? "yes" : "none") << "\n";
  if (def.is_variable)
    std::cout << "    variable\n";
  else if (def.is_stateful)
    std::cout << "    stateful\n";
  PrintBuilders(def);
}

struct OpsOptions {
  bool json = false;
  std::vector<std::string> names;
};

void ListOps(const OpsOptions& options) {
  std::vector<const OpDef*> defs;
  if (options.names.empty()) defs = OpRegistry::Global().All();
  for (const std::string& name : options.names) defs.push_back(&OpRegistry::Global().Get(name));
  if (options.json) {
    Json out = Json::array();
    for (const OpDef* def : defs) out.push_back(OpToJson(*def));
    std::cout << out.dump(2) << "\n";
    return;
  }
  for (size_t i = 0; i < defs.size(); ++i) {
    if (i) std::cout << "\n";
    PrintOp(*defs[i]);
  }
}

}  // namespace

void AddOpsCommand(CLI::App& app) {
  auto options = std::make_shared<OpsOptions>();
  CLI::App* ops = app.add_subcommand("ops", "List the registered ops: signature, attrs, doc and the C++ builder.");
  ops->add_flag("--json", options->json, "Print a JSON array instead of text.");
  ops->add_option("op", options->names, "Only these ops (default: all).");
  ops->callback([options] { ListOps(*options); });
}

}  // namespace dflow::cli

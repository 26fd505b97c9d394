#include "graph/memory_types.h"

#include <map>
#include <mutex>
#include <shared_mutex>
#include <tuple>

#include "graph/gpu_module.h"

namespace dflow {
namespace {

// (op, device type) -> the args declared in host memory. Function-level
// statics: registrations run during static initialisation, and the CUDA
// module registers its own when it is loaded, possibly while sessions look
// them up.
using HostMemoryTable = std::map<std::pair<std::string, std::string>, std::vector<std::string>>;

HostMemoryTable& Table() {
  static HostMemoryTable* table = new HostMemoryTable;
  return *table;
}

std::shared_mutex& TableMutex() {
  static std::shared_mutex* mutex = new std::shared_mutex;
  return *mutex;
}

// How many tensors an arg stands for on this node: 1, or N for a list.
int ArgLength(const Node& node, const ArgDef& arg) {
  return arg.number_attr.empty() ? 1 : static_cast<int>(node.attr<int64_t>(arg.number_attr));
}

// Marks the named args' tensors kHost; returns whether `name` is one of them.
bool MarkArg(const Node& node, const std::vector<ArgDef>& args, const std::string& name,
             std::vector<MemoryType>& types) {
  size_t at = 0;
  for (const ArgDef& arg : args) {
    int length = ArgLength(node, arg);
    if (arg.name == name) {
      for (int i = 0; i < length && at + i < types.size(); ++i) types[at + i] = MemoryType::kHost;
      return true;
    }
    at += static_cast<size_t>(length);
  }
  return false;
}

}  // namespace

bool HasDeviceMemory(std::string_view device_type) { return device_type != "CPU"; }

void RegisterHostMemory(const std::string& op, const std::string& device_type,
                        const std::vector<std::string>& args) {
  std::unique_lock lock(TableMutex());
  std::vector<std::string>& names = Table()[{op, device_type}];
  names.insert(names.end(), args.begin(), args.end());
}

NodeMemoryTypes MemoryTypesOf(const Node& node, const std::string& device_type) {
  const MemoryType all = HasDeviceMemory(device_type) ? MemoryType::kDevice : MemoryType::kHost;
  NodeMemoryTypes types{std::vector<MemoryType>(node.num_inputs(), all),
                        std::vector<MemoryType>(node.num_outputs(), all)};
  if (all == MemoryType::kHost) return types;
  // The GPU's declarations come with its kernels, in the CUDA module: the
  // process that partitions (a client of remote GPUs) and the one that runs
  // a partition must both see them.
  if (device_type == "GPU") LoadGpuModule();
  if (node.op() == "_Recv" && node.has_attr("host_memory") && node.attr<bool>("host_memory"))
    types.outputs[0] = MemoryType::kHost;
  std::shared_lock lock(TableMutex());
  auto it = Table().find({node.op(), device_type});
  if (it == Table().end()) return types;
  for (const std::string& name : it->second)
    if (!MarkArg(node, node.def().inputs, name, types.inputs) &&
        !MarkArg(node, node.def().outputs, name, types.outputs))
      Fail(Code::kInternal, "host memory declared for ", node.op(), " on ", device_type,
           ": the op has no arg '", name, "' (", node.def().Signature(), ")");
  return types;
}

std::vector<std::string> HostMemoryDeclarationErrors() {
  std::vector<std::string> errors;
  std::shared_lock lock(TableMutex());
  for (const auto& [key, names] : Table()) {
    const auto& [op, device_type] = key;
    const OpDef* def = OpRegistry::Global().Find(op);
    if (!def) {
      errors.push_back(StrCat("host memory declared for unknown op ", op, " on ", device_type));
      continue;
    }
    auto has = [](const std::vector<ArgDef>& args, const std::string& name) {
      for (const ArgDef& arg : args)
        if (arg.name == name) return true;
      return false;
    };
    for (const std::string& name : names)
      if (!has(def->inputs, name) && !has(def->outputs, name))
        errors.push_back(StrCat(op, " on ", device_type, ": no arg '", name, "' in ", def->Signature()));
  }
  return errors;
}

}  // namespace dflow

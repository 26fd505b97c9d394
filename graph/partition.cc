#include "graph/partition.h"

#include <nlohmann/json.hpp>
#include <set>

#include "graph/graph_io.h"
#include "graph/memory_types.h"

namespace dflow {
namespace {

std::string NameFragment(const std::string& tensor_name) {
  std::string out = tensor_name;
  for (char& c : out)
    if (c == ':' || c == '^') c = '_';
  return out;
}

// Builds the partitions node by node in topological order, so every input of
// a node is already copied (or received) when the node is copied.
class Partitioner {
 public:
  Partitioner(const Graph& graph, const Placement& placement, const PartitionOptions& options)
      : graph_(graph), placement_(placement), options_(options) {}

  std::vector<DevicePartition> Run() {
    std::vector<Node*> order = graph_.TopologicalOrder();
    for (const Node* node : order) NoteHostReceives(*node);
    for (const Node* node : order) Copy(*node);
    std::vector<DevicePartition> out;
    for (const std::string& device : placement_.devices)
      if (parts_.count(device)) out.push_back({device, parts_[device]});
    return out;
  }

 private:
  Graph& PartFor(const std::string& device) {
    auto& part = parts_[device];
    if (!part) part = std::make_shared<Graph>();
    return *part;
  }

  int64_t Incarnation(const std::string& device) const {
    auto it = options_.incarnations.find(device);
    return it == options_.incarnations.end() ? 1 : it->second;
  }

  void Copy(const Node& node) {
    const std::string& device = placement_.DeviceOf(node.name());
    NodeSpec spec{node.name(), node.op(), {}, {}, node.attrs(), device};
    for (int i = 0; i < node.num_inputs(); ++i) {
      const NodeOut& in = node.input(i);
      if (node.IsRefInput(i)) {
        if (DeviceOf(*in.node) != device)  // colocation keeps ref edges whole; this is a placer bug
          Fail(Code::kInternal, node.Describe(), " on ", device, " takes the ref of ",
               in.node->Describe(), " on ", DeviceOf(*in.node),
               ": a variable's ref cannot cross devices");
        spec.inputs.push_back({copy_of_.at(in.node), in.index});
        continue;
      }
      spec.inputs.push_back(Input(in, device, InputMemory(node, i)));
    }
    for (const Node* control : node.control_inputs())
      spec.control_inputs.push_back(
          DeviceOf(*control) == device ? copy_of_.at(control) : ReceivedControl(*control, device));
    Node* copy = PartFor(device).AddNode(std::move(spec));
    copy->set_assigned_device(device);
    copy_of_[&node] = copy;
  }

  const std::string& DeviceOf(const Node& node) const { return placement_.DeviceOf(node.name()); }

  const std::string& TypeOf(const std::string& device) {
    auto [it, inserted] = device_types_.try_emplace(device);
    if (inserted) it->second = DeviceName::Parse(device).type;
    return it->second;
  }

  // Where `node`'s input or output lives (graph/memory_types.h); always the
  // host on the CPU.
  const NodeMemoryTypes* MemoryTypes(const Node& node) {
    const std::string& type = TypeOf(DeviceOf(node));
    if (!HasDeviceMemory(type)) return nullptr;
    auto [it, inserted] = memory_types_.try_emplace(&node);
    if (inserted) it->second = MemoryTypesOf(node, type);
    return &it->second;
  }
  MemoryType InputMemory(const Node& node, int i) {
    const NodeMemoryTypes* types = MemoryTypes(node);
    return types ? types->inputs[i] : MemoryType::kHost;
  }
  MemoryType OutputMemory(const NodeOut& out) {
    const NodeMemoryTypes* types = MemoryTypes(*out.node);
    return types ? types->outputs[out.index] : MemoryType::kHost;
  }

  // A tensor sent to a device with memory of its own is received in host
  // memory when a consumer there reads it from the host (no copy to the
  // device and back): the others then take an upload (_HostToDevice).
  void NoteHostReceives(const Node& node) {
    const std::string& device = DeviceOf(node);
    for (int i = 0; i < node.num_inputs(); ++i) {
      const NodeOut& in = node.input(i);
      if (DeviceOf(*in.node) != device && InputMemory(node, i) == MemoryType::kHost &&
          HasDeviceMemory(TypeOf(device)))
        host_receives_.insert({StrCat(in.node->name(), ":", in.index), device});
    }
  }

  // The value of `in`, an input of a node on `device`, in the memory `want`.
  NodeOut Input(const NodeOut& in, const std::string& device, MemoryType want) {
    if (DeviceOf(*in.node) != device) {
      Node* recv = ReceivedTensor(in, device);
      MemoryType have = MemoryTypesOf(*recv, TypeOf(device)).outputs[0];
      return have == want ? NodeOut{recv, 0} : InMemory(in, {recv, 0}, want, device);
    }
    NodeOut value{copy_of_.at(in.node), in.index};
    return OutputMemory(in) == want ? value : InMemory(in, value, want, device);
  }

  // `value` (the copy or receipt of `in`) moved to the memory `want` of
  // `device`: a known value becomes a HostConst, anything else is copied.
  // One node per (tensor, device, memory), shared by every consumer.
  NodeOut InMemory(const NodeOut& in, NodeOut value, MemoryType want, const std::string& device) {
    std::string tensor_name = StrCat(in.node->name(), ":", in.index);
    Node*& moved = moved_[{tensor_name, device, want}];
    if (moved) return {moved, 0};
    const bool to_host = want == MemoryType::kHost;
    std::optional<Tensor> known = to_host ? KnownValue(in) : std::nullopt;
    Graph& part = PartFor(device);
    const char* op = known ? "HostConst" : to_host ? "_DeviceToHost" : "_HostToDevice";
    const char* prefix = known ? "_host_const/" : to_host ? "_to_host/" : "_to_device/";
    std::string name = part.UniqueName(StrCat(prefix, NameFragment(tensor_name)));
    DType dtype = in.node->output_dtype(in.index);
    NodeSpec spec = known ? NodeSpec{name, op, {}, {}, {{"value", *known}, {"dtype", dtype}}, device}
                          : NodeSpec{name, op, {value}, {}, {{"T", dtype}}, device};
    moved = part.AddNode(std::move(spec));
    moved->set_assigned_device(device);
    return {moved, 0};
  }

  // The _Recv on `device` for a tensor made elsewhere; one per (tensor, device).
  Node* ReceivedTensor(const NodeOut& in, const std::string& device) {
    std::string tensor_name = StrCat(in.node->name(), ":", in.index);
    Node*& recv = received_[{tensor_name, device}];
    if (!recv)
      recv = AddPair({copy_of_.at(in.node), in.index}, DeviceOf(*in.node), device, tensor_name,
                     in.node->output_shape(in.index), host_receives_.count({tensor_name, device}) > 0);
    return recv;
  }

  // The _Recv on `device` that stands for "`source` has run": `source`'s
  // device makes an empty tensor after it and sends that.
  Node* ReceivedControl(const Node& source, const std::string& device) {
    std::string tensor_name = "^" + source.name();
    Node*& recv = received_[{tensor_name, device}];
    if (recv) return recv;
    const std::string& from = DeviceOf(source);
    Graph& part = PartFor(from);
    Node* dummy = part.AddNode(
        {part.UniqueName("_control/" + source.name() + "/to_" + DeviceFileName(device)),
         "Const",
         {},
         {copy_of_.at(&source)},
         {{"value", Tensor(DType::kFloat32, Shape({0}))}, {"dtype", DType::kFloat32}},
         from});
    dummy->set_assigned_device(from);
    recv = AddPair({dummy, 0}, from, device, tensor_name, Shape({0}), false);
    return recv;
  }

  Node* AddPair(NodeOut sent, const std::string& from, const std::string& to,
                const std::string& tensor_name, const Shape& shape, bool host_memory) {
    AttrMap key{{"tensor_name", tensor_name},
                {"send_device", from},
                {"send_device_incarnation", Incarnation(from)},
                {"recv_device", to}};
    std::string fragment = NameFragment(tensor_name);
    Graph& src = PartFor(from);
    Node* send = src.AddNode({src.UniqueName("_send/" + fragment + "/to_" + DeviceFileName(to)),
                              "_Send",
                              {sent},
                              {},
                              key,
                              from});
    send->set_assigned_device(from);
    AttrMap recv_attrs = key;
    recv_attrs["tensor_type"] = sent.node->output_dtype(sent.index);
    recv_attrs["shape"] = shape;
    if (host_memory) recv_attrs["host_memory"] = true;
    Graph& dst = PartFor(to);
    Node* recv = dst.AddNode({dst.UniqueName("_recv/" + fragment + "/from_" + DeviceFileName(from)),
                              "_Recv",
                              {},
                              {},
                              std::move(recv_attrs),
                              to});
    recv->set_assigned_device(to);
    return recv;
  }

  const Graph& graph_;
  const Placement& placement_;
  const PartitionOptions& options_;
  std::map<std::string, std::shared_ptr<Graph>> parts_;
  std::map<const Node*, Node*> copy_of_;
  std::map<std::pair<std::string, std::string>, Node*> received_;  // (tensor name, device)
  std::set<std::pair<std::string, std::string>> host_receives_;    // (tensor name, device)
  std::map<std::tuple<std::string, std::string, MemoryType>, Node*> moved_;
  std::map<std::string, std::string> device_types_;
  std::map<const Node*, NodeMemoryTypes> memory_types_;
};

}  // namespace

std::vector<DevicePartition> Partition(const Graph& graph, const Placement& placement,
                                       const PartitionOptions& options) {
  return Partitioner(graph, placement, options).Run();
}

std::vector<DevicePartition> Partition(std::unique_ptr<Graph> graph, const Placement& placement,
                                       const PartitionOptions& options) {
  std::set<std::string> used;
  for (const Node* node : graph->nodes()) used.insert(placement.DeviceOf(node->name()));
  // A device with memory of its own may need copies between its host and
  // device memory (graph/memory_types.h): those come from the copying path.
  if (used.size() != 1 || HasDeviceMemory(DeviceName::Parse(*used.begin()).type))
    return Partition(*graph, placement, options);
  for (Node* node : graph->nodes()) {
    node->set_requested_device(*used.begin());
    node->set_assigned_device(*used.begin());
  }
  return {{*used.begin(), std::move(graph)}};
}

std::string DeviceFileName(const std::string& device) {
  DeviceName name = DeviceName::Parse(device);
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : ".") + part; };
  if (!name.job.empty()) add(name.job);
  if (name.task) add(std::to_string(*name.task));
  if (!name.type.empty()) add(name.type);
  if (name.index) add(std::to_string(*name.index));
  return out.empty() ? "any" : out;
}

nlohmann::ordered_json PartitionsToJson(const std::vector<DevicePartition>& partitions) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const DevicePartition& p : partitions)
    list.push_back({{"device", p.device}, {"graph", ToJson(*p.graph)}});
  return {{"partitions", std::move(list)}};
}

}  // namespace dflow

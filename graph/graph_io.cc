// The JSON graph file: writing, and loading with a check of every field.
// Loading reads all node entries first, resolves input names, sorts the nodes
// topologically (keeping file order where dependencies allow, so a saved
// graph loads back in the same order), then adds them through Graph::AddNode,
// which validates each node against its OpDef and infers shapes.
#include "graph/graph_io.h"

#include <charconv>
#include <functional>
#include <nlohmann/json.hpp>
#include <queue>

#include "graph/file.h"
#include "graph/json.h"

namespace dflow {
namespace {

using Json = nlohmann::ordered_json;

// One entry of "inputs": "node", "node:1" or "^node".
struct InputRef {
  std::string text;
  std::string node;
  int index = 0;
  bool control = false;
  int source = -1;  // position of the producing node in the file
};

struct NodeEntry {
  const Json* json = nullptr;
  std::string name;
  std::string op;
  std::string device;
  std::vector<InputRef> inputs;
};

class GraphLoader {
 public:
  GraphLoader(const Json& doc, std::string_view source) : doc_(doc), source_(source) {}

  std::shared_ptr<Graph> Load() {
    auto graph = std::make_shared<Graph>();
    ReadTop(*graph);
    ResolveInputs();
    for (int i : TopologicalOrder()) AddToGraph(entries_[i], *graph);
    return graph;
  }

 private:
  template <typename... Args>
  [[noreturn]] void Bad(Code code, const Args&... args) const {
    Fail(code, "'", source_, "': ", args...);
  }
  static std::string Where(const NodeEntry& e) {
    return e.op.empty() ? StrCat("node '", e.name, "'")
                        : StrCat("node '", e.name, "' (", e.op, ")");
  }

  void ReadTop(Graph& graph) {
    if (!doc_.is_object())
      Bad(Code::kInvalidArgument, "expected a JSON object with \"format\" and \"nodes\", got ",
          doc_.type_name());
    for (const auto& [key, unused] : doc_.items())
      if (key != "format" && key != "seed" && key != "metadata" && key != "nodes")
        Bad(Code::kInvalidArgument, "unknown top-level field \"", key,
            "\" (expected \"format\", \"seed\", \"metadata\", \"nodes\")");
    if (!doc_.contains("format"))
      Bad(Code::kInvalidArgument, "missing \"format\": \"", kGraphFormat, "\"");
    const Json& format = doc_["format"];
    if (!format.is_string() || format.get_ref<const std::string&>() != kGraphFormat)
      Bad(Code::kInvalidArgument, "unsupported format ", DescribeJson(format), " (expected \"",
          kGraphFormat, "\")");
    if (doc_.contains("seed")) {
      const Json& seed = doc_["seed"];
      if (!seed.is_number_integer() ||
          (seed.is_number_unsigned() && seed.get<uint64_t>() > INT64_MAX))
        Bad(Code::kInvalidArgument, "\"seed\" must be an integer, got ", DescribeJson(seed));
      graph.set_seed(seed.get<int64_t>());
    }
    if (doc_.contains("metadata")) ReadMetadata(doc_["metadata"], graph);
    if (!doc_.contains("nodes") || !doc_["nodes"].is_array())
      Bad(Code::kInvalidArgument, "\"nodes\" must be a list of nodes");
    const Json& nodes = doc_["nodes"];
    for (size_t i = 0; i < nodes.size(); ++i) entries_.push_back(ReadEntry(nodes[i], i));
  }

  void ReadMetadata(const Json& metadata, Graph& graph) {
    if (!metadata.is_object())
      Bad(Code::kInvalidArgument, "\"metadata\" must be an object of strings, got ", DescribeJson(metadata));
    for (const auto& [key, value] : metadata.items()) {
      if (!value.is_string())
        Bad(Code::kInvalidArgument, "metadata \"", key, "\" must be a string, got ", DescribeJson(value));
      graph.set_metadata(key, value.get<std::string>());
    }
  }

  NodeEntry ReadEntry(const Json& node, size_t i) {
    NodeEntry entry;
    entry.json = &node;
    if (!node.is_object()) Bad(Code::kInvalidArgument, "nodes[", i, "]: expected an object");
    auto string_field = [&](const char* key, std::string& out, bool required) {
      if (!node.contains(key)) {
        if (required)
          Bad(Code::kInvalidArgument, "nodes[", i, "]", entry.name.empty() ? "" : " ",
              entry.name.empty() ? "" : Where(entry), ": missing \"", key, "\"");
        return;
      }
      if (!node[key].is_string())
        Bad(Code::kInvalidArgument, "nodes[", i, "]: \"", key, "\" must be a string, got ",
            DescribeJson(node[key]));
      out = node[key].get<std::string>();
    };
    string_field("name", entry.name, true);
    string_field("op", entry.op, true);
    string_field("device", entry.device, false);
    for (const auto& [key, unused] : node.items())
      if (key != "name" && key != "op" && key != "inputs" && key != "attrs" && key != "device")
        Bad(Code::kInvalidArgument, Where(entry), ": unknown field \"", key,
            "\" (a node has name, op, inputs, attrs, device)");
    if (node.contains("attrs") && !node["attrs"].is_object())
      Bad(Code::kInvalidArgument, Where(entry), ": \"attrs\" must be an object");
    if (node.contains("inputs")) {
      if (!node["inputs"].is_array())
        Bad(Code::kInvalidArgument, Where(entry), ": \"inputs\" must be a list of strings");
      for (const Json& input : node["inputs"]) {
        if (!input.is_string())
          Bad(Code::kInvalidArgument, Where(entry), ": input ", DescribeJson(input),
              " is not a string");
        entry.inputs.push_back(ParseInput(entry, input.get<std::string>()));
      }
    }
    auto [it, added] = positions_.emplace(entry.name, i);
    if (!added)
      Bad(Code::kAlreadyExists, "duplicate node name '", entry.name, "' (nodes[", it->second,
          "] and nodes[", i, "])");
    return entry;
  }

  InputRef ParseInput(const NodeEntry& entry, const std::string& text) {
    InputRef ref;
    ref.text = text;
    std::string_view name = text;
    if (!name.empty() && name[0] == '^') {
      ref.control = true;
      ref.index = -1;
      name.remove_prefix(1);
    }
    size_t colon = name.rfind(':');
    if (colon != std::string_view::npos) {
      std::string_view digits = name.substr(colon + 1);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), ref.index);
      if (ref.control || digits.empty() || ec != std::errc() ||
          end != digits.data() + digits.size() || ref.index < 0)
        Bad(Code::kInvalidArgument, Where(entry), ": malformed input '", text,
            "' (expected \"node\", \"node:index\" or \"^node\")");
      name = name.substr(0, colon);
    }
    if (name.empty())
      Bad(Code::kInvalidArgument, Where(entry), ": malformed input '", text, "' (no node name)");
    ref.node = name;
    return ref;
  }

  void ResolveInputs() {
    for (NodeEntry& entry : entries_)
      for (InputRef& ref : entry.inputs) {
        auto it = positions_.find(ref.node);
        if (it == positions_.end())
          Bad(Code::kInvalidArgument, Where(entry), ": input '", ref.text,
              "' names no node in the file");
        ref.source = static_cast<int>(it->second);
      }
  }

  // Kahn's algorithm taking the earliest ready node in file order.
  std::vector<int> TopologicalOrder() const {
    int n = static_cast<int>(entries_.size());
    std::vector<int> pending(n, 0), order;
    std::vector<std::vector<int>> consumers(n);
    for (int i = 0; i < n; ++i)
      for (const InputRef& ref : entries_[i].inputs) {
        ++pending[i];
        consumers[ref.source].push_back(i);
      }
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    for (int i = 0; i < n; ++i)
      if (pending[i] == 0) ready.push(i);
    while (!ready.empty()) {
      int i = ready.top();
      ready.pop();
      order.push_back(i);
      for (int c : consumers[i])
        if (--pending[c] == 0) ready.push(c);
    }
    if (static_cast<int>(order.size()) != n) ReportCycle(pending);
    return order;
  }

  // Every node left pending has a pending input, so walking inputs backwards
  // from one of them must revisit a node: that loop is a cycle.
  [[noreturn]] void ReportCycle(const std::vector<int>& pending) const {
    int current =
        static_cast<int>(std::find_if(pending.begin(), pending.end(), [](int p) { return p > 0; }) -
                         pending.begin());
    std::vector<int> path;
    std::vector<int> seen_at(entries_.size(), -1);
    while (seen_at[current] < 0) {
      seen_at[current] = static_cast<int>(path.size());
      path.push_back(current);
      for (const InputRef& ref : entries_[current].inputs)
        if (pending[ref.source] > 0) {
          current = ref.source;
          break;
        }
    }
    // path[seen_at[current]..] walks consumer -> producer; print it in data-flow order.
    std::string cycle = "'" + entries_[current].name + "'";
    for (int k = static_cast<int>(path.size()) - 1; k >= seen_at[current]; --k)
      cycle += " -> '" + entries_[path[k]].name + "'";
    Bad(Code::kInvalidArgument, "the graph has a cycle: ", cycle);
  }

  void AddToGraph(const NodeEntry& entry, Graph& graph) const {
    const OpDef* def = OpRegistry::Global().Find(entry.op);
    if (!def)
      Bad(Code::kNotFound, Where(entry), ": unknown op '", entry.op,
          "' (`dflow ops` lists the registered ops)");
    NodeSpec spec;
    spec.name = entry.name;
    spec.op = entry.op;
    spec.device = entry.device;
    if (entry.json->contains("attrs"))
      for (const auto& [key, value] : (*entry.json)["attrs"].items()) {
        const AttrDef* attr = def->FindAttr(key);
        if (!attr) {
          std::string known;
          for (const AttrDef& a : def->attrs) known += (known.empty() ? "" : ", ") + a.name;
          Bad(Code::kInvalidArgument, Where(entry), ": unknown attr '", key, "' (", entry.op,
              known.empty() ? " has no attrs)" : " has attrs: " + known + ")");
        }
        try {
          spec.attrs[key] = AttrFromJson(value, attr->type);
        } catch (const Error& e) {
          Bad(e.code(), Where(entry), ": attr '", key, "' (", AttrTypeName(attr->type),
              "): ", e.message());
        }
      }
    for (const InputRef& ref : entry.inputs) {
      Node* source = graph.FindNode(ref.node);  // present: inputs are added first
      if (ref.control) {
        spec.control_inputs.push_back(source);
      } else if (ref.index >= source->num_outputs()) {
        Bad(Code::kInvalidArgument, Where(entry), ": input '", ref.text, "': ", source->Describe(),
            " has only ", source->num_outputs(), " output(s)");
      } else {
        spec.inputs.push_back({source, ref.index});
      }
    }
    try {
      graph.AddNode(std::move(spec));
    } catch (const Error& e) {
      Bad(e.code(), e.message());
    }
  }

  const Json& doc_;
  std::string_view source_;
  std::vector<NodeEntry> entries_;
  std::map<std::string, size_t, std::less<>> positions_;
};

Json NodeToJson(const Node& node) {
  Json out{{"name", node.name()}, {"op", node.op()}};
  Json inputs = Json::array();
  for (const NodeOut& in : node.inputs()) inputs.push_back(in.name());
  for (const Node* control : node.control_inputs()) inputs.push_back("^" + control->name());
  if (!inputs.empty()) out["inputs"] = std::move(inputs);
  if (!node.attrs().empty()) {
    Json attrs = Json::object();
    for (const auto& [name, value] : node.attrs()) attrs[name] = AttrToJson(value);
    out["attrs"] = std::move(attrs);
  }
  if (!node.requested_device().empty()) out["device"] = node.requested_device();
  return out;
}

}  // namespace

nlohmann::ordered_json ToJson(const Graph& graph) {
  Json nodes = Json::array();
  for (const Node* node : graph.nodes()) nodes.push_back(NodeToJson(*node));
  Json doc{{"format", std::string(kGraphFormat)}, {"seed", graph.seed()}};
  if (!graph.metadata().empty()) doc["metadata"] = graph.metadata();  // files without it stay as they were
  doc["nodes"] = std::move(nodes);
  return doc;
}

std::shared_ptr<Graph> GraphFromJson(const nlohmann::ordered_json& doc, std::string_view source) {
  return GraphLoader(doc, source).Load();
}

std::shared_ptr<Graph> ParseGraph(std::string_view text, std::string_view source) {
  return GraphFromJson(ParseJson<Json>(text, source), source);
}

void SaveGraph(const Graph& graph, const std::string& path) {
  // One node per line: diffs stay readable and large tensors stay compact.
  Json doc = ToJson(graph);
  std::string text = StrCat("{\n  \"format\": ", doc["format"].dump(), ",\n  \"seed\": ", doc["seed"].dump(),
                            doc.contains("metadata") ? ",\n  \"metadata\": " + doc["metadata"].dump() : "",
                            ",\n  \"nodes\": [");
  const Json& nodes = doc["nodes"];
  for (size_t i = 0; i < nodes.size(); ++i) {
    try {
      text += StrCat(i ? ",\n    " : "\n    ", nodes[i].dump());
    } catch (const Json::type_error& e) {  // a string attr that is not UTF-8
      Fail(Code::kInvalidArgument, "cannot save node '", nodes[i]["name"].get<std::string>(),
           "' to '", path, "': ", JsonErrorMessage(e));
    }
  }
  text += nodes.empty() ? "]\n}\n" : "\n  ]\n}\n";
  WriteFileAtomic(path, text);
}

std::shared_ptr<Graph> LoadGraph(const std::string& path) {
  return ParseGraph(ReadFileToString(path), path);
}

}  // namespace dflow

// Graphviz DOT export (`dflow dot g.json | dot -Tsvg > g.svg`).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>
#include <sstream>

#include "graph/graph_io.h"

namespace dflow {
namespace {

// Pastel fills that keep black text readable; devices cycle through them
// in order of first appearance.
constexpr const char* kPalette[] = {"#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6",
                                    "#fb9a99", "#ffff99", "#8dd3c7", "#bebada"};

}  // namespace

std::string DotQuote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

namespace {

// The name scopes of `name`: "a/b/op" -> {"a", "a/b"}.
std::vector<std::string> ScopesOf(std::string_view name) {
  std::vector<std::string> scopes;
  for (size_t slash = name.find('/'); slash != std::string_view::npos; slash = name.find('/', slash + 1))
    scopes.emplace_back(name.substr(0, slash));
  return scopes;
}

// What a node is drawn as: itself, or the scope box it collapses into.
std::string BoxOf(const Node& node, int collapse_depth) {
  if (collapse_depth <= 0) return node.name();
  std::vector<std::string> scopes = ScopesOf(node.name());
  return scopes.size() >= static_cast<size_t>(collapse_depth) ? scopes[collapse_depth - 1] : node.name();
}

bool Shown(const Node& node, const DotOptions& options) {
  return options.only.empty() || node.name().starts_with(options.only);
}

struct Box {
  std::string label;
  std::string device;
  std::vector<std::string> scopes;  // the clusters it sits in, outermost first
  int ops = 0;
  std::map<std::string, int> op_counts;
};

// One DOT line per box, inside nested "cluster_<scope>" subgraphs.
void WriteBoxes(std::ostringstream& out, const std::map<std::string, Box>& boxes) {
  std::map<std::string, const char*> colours;
  std::vector<std::string> open;  // the clusters now open
  for (const auto& [name, box] : boxes) {  // sorted by name: a scope's boxes are adjacent
    size_t common = 0;
    while (common < open.size() && common < box.scopes.size() && open[common] == box.scopes[common]) ++common;
    for (size_t i = open.size(); i > common; --i) out << std::string(2 * i, ' ') << "}\n";
    open.resize(common);
    for (size_t i = common; i < box.scopes.size(); ++i) {
      open.push_back(box.scopes[i]);
      out << std::string(2 * open.size(), ' ') << "subgraph " << DotQuote("cluster_" + box.scopes[i]) << " {\n"
          << std::string(2 * open.size() + 2, ' ') << "label=" << DotQuote(box.scopes[i]) << "; style=rounded; color=\"#999999\";\n";
    }
    out << std::string(2 * open.size() + 2, ' ') << DotQuote(name) << " [label=" << DotQuote(box.label);
    if (box.ops > 1) out << ", shape=box3d";
    if (box.ops == 0) out << ", shape=ellipse, style=dashed";
    if (!box.device.empty()) {
      auto [it, added] = colours.emplace(box.device, nullptr);
      if (added) it->second = kPalette[(colours.size() - 1) % std::size(kPalette)];
      out << ", fillcolor=\"" << it->second << "\", tooltip=" << DotQuote(box.device);
    }
    out << "];\n";
  }
  for (size_t i = open.size(); i > 0; --i) out << std::string(2 * i, ' ') << "}\n";
}

std::string CollapsedLabel(const std::string& name, const Box& box) {
  std::vector<std::pair<int, std::string>> by_count;
  for (const auto& [op, count] : box.op_counts) by_count.push_back({-count, op});
  std::sort(by_count.begin(), by_count.end());
  std::string ops;
  for (size_t i = 0; i < by_count.size() && i < 3; ++i)
    ops += StrCat(i ? ", " : "", by_count[i].second, by_count[i].first < -1 ? StrCat(" x", -by_count[i].first) : "");
  if (by_count.size() > 3) ops += ", ...";
  return StrCat(name, "\n", box.ops, " ops: ", ops);
}

}  // namespace

std::string ToDot(const Graph& graph, const DotOptions& options) {
  std::ostringstream out;
  out << "digraph dflow {\n"
      << "  rankdir=TB;\n"
      << "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", "
         "fontname=\"Helvetica\"];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=10];\n";
  std::map<std::string, Box> boxes;
  auto box_of = [&](const Node& node) -> Box& {
    std::string name = BoxOf(node, options.collapse_depth);
    Box& box = boxes[name];
    if (box.scopes.empty()) box.scopes = ScopesOf(name);
    return box;
  };
  for (const Node* node : graph.nodes()) {
    if (!Shown(*node, options)) continue;
    Box& box = box_of(*node);
    const std::string& device =
        node->assigned_device().empty() ? node->requested_device() : node->assigned_device();
    if (box.ops++ == 0) box.device = device;
    if (box.device != device) box.device.clear();  // mixed devices: no single colour
    ++box.op_counts[node->op()];
  }
  for (auto& [name, box] : boxes) {
    const Node* single = box.ops == 1 ? graph.FindNode(name) : nullptr;  // a node drawn as itself
    box.label = single ? name + "\n" + single->op() : CollapsedLabel(name, box);
  }
  // Every edge between nodes, in node order; between collapsed boxes, one per
  // pair (the first one's label), and none inside a box.
  struct Edge {
    std::string from, to, label;
    bool control;
  };
  std::vector<Edge> edges;
  std::set<std::pair<std::string, std::string>> merged;
  for (const Node* node : graph.nodes()) {
    if (!Shown(*node, options)) continue;
    const std::string to = BoxOf(*node, options.collapse_depth);
    auto add = [&](const Node& from_node, std::string label, bool control) {
      if (!Shown(from_node, options)) {
        Box& outside = boxes[from_node.name()];  // drawn as a plain ellipse
        outside.label = from_node.name() + "\n" + from_node.op();
      }
      std::string from = Shown(from_node, options) ? BoxOf(from_node, options.collapse_depth) : from_node.name();
      if (options.collapse_depth > 0 && (from == to || !merged.emplace(from, to).second)) return;
      edges.push_back({from, to, std::move(label), control});
    };
    for (const NodeOut& in : node->inputs()) {
      std::string label = options.shapes ? StrCat(DTypeName(in.node->output_dtype(in.index)),
                                                  in.node->output_shape(in.index).ToString())
                                         : "";
      if (options.shapes && in.index != 0) label = StrCat(":", in.index, " ", label);
      add(*in.node, label, false);
    }
    for (const Node* control : node->control_inputs()) add(*control, "", true);
  }
  WriteBoxes(out, boxes);
  for (const Edge& edge : edges) {
    out << "  " << DotQuote(edge.from) << " -> " << DotQuote(edge.to);
    if (edge.control)
      out << " [style=dashed]";
    else if (!edge.label.empty())
      out << " [label=" << DotQuote(edge.label) << "]";
    out << ";\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace dflow

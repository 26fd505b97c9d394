// Graphviz DOT export (`dflow dot g.json | dot -Tsvg > g.svg`).
#include <map>
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

std::string ToDot(const Graph& graph) {
  std::ostringstream out;
  out << "digraph dflow {\n"
      << "  rankdir=TB;\n"
      << "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", "
         "fontname=\"Helvetica\"];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=10];\n";
  std::map<std::string, const char*> colours;
  for (const Node* node : graph.nodes()) {
    const std::string& device =
        node->assigned_device().empty() ? node->requested_device() : node->assigned_device();
    out << "  " << DotQuote(node->name()) << " [label=" << DotQuote(node->name() + "\n" + node->op());
    if (!device.empty()) {
      auto [it, added] = colours.emplace(device, nullptr);
      if (added) it->second = kPalette[(colours.size() - 1) % std::size(kPalette)];
      out << ", fillcolor=\"" << it->second << "\", tooltip=" << DotQuote(device);
    }
    out << "];\n";
  }
  for (const Node* node : graph.nodes()) {
    for (const NodeOut& in : node->inputs()) {
      std::string label = StrCat(DTypeName(in.node->output_dtype(in.index)),
                                 in.node->output_shape(in.index).ToString());
      if (in.index != 0) label = StrCat(":", in.index, " ", label);
      out << "  " << DotQuote(in.node->name()) << " -> " << DotQuote(node->name())
          << " [label=" << DotQuote(label) << "];\n";
    }
    for (const Node* control : node->control_inputs())
      out << "  " << DotQuote(control->name()) << " -> " << DotQuote(node->name())
          << " [style=dashed];\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace dflow

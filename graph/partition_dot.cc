// The partitions as one Graphviz picture: a box (cluster) per device, and the
// Send -> Recv hops between them drawn as bold red edges.
#include <map>
#include <sstream>

#include "graph/partition.h"
#include "graph/graph_io.h"

namespace dflow {
namespace {

constexpr const char* kClusterFills[] = {"#eef5fb", "#f0f8ea", "#fff4e6", "#f4effa", "#fdeeee"};

// A node id unique across partitions: "p1/name".
std::string Id(size_t partition, const Node& node) {
  return DotQuote(StrCat("p", partition, "/", node.name()));
}

std::string Label(const Node& node) {
  if (node.op() == "_Send" || node.op() == "_Recv")
    return DotQuote(node.op() + "\n" + node.attr<std::string>("tensor_name"));
  return DotQuote(node.name() + "\n" + node.op());
}

void WriteCluster(std::ostringstream& out, size_t index, const DevicePartition& part) {
  out << "  subgraph \"cluster_" << index << "\" {\n"
      << "    label=" << DotQuote(part.device) << "; style=filled; fillcolor=\""
      << kClusterFills[index % std::size(kClusterFills)] << "\";\n";
  for (const Node* node : part.graph->nodes()) {
    bool comm = node->op() == "_Send" || node->op() == "_Recv";
    out << "    " << Id(index, *node) << " [label=" << Label(*node)
        << (comm ? ", shape=cds, fillcolor=\"#ffd8d8\"" : "") << "];\n";
  }
  for (const Node* node : part.graph->nodes()) {
    for (const NodeOut& in : node->inputs())
      out << "    " << Id(index, *in.node) << " -> " << Id(index, *node) << " [label="
          << DotQuote(StrCat(DTypeName(in.node->output_dtype(in.index)),
                             in.node->output_shape(in.index).ToString()))
          << "];\n";
    for (const Node* control : node->control_inputs())
      out << "    " << Id(index, *control) << " -> " << Id(index, *node) << " [style=dashed];\n";
  }
  out << "  }\n";
}

// The rendezvous key of a _Send or _Recv, minus the step.
std::string Key(const Node& node) {
  return node.attr<std::string>("send_device") + ";" + node.attr<std::string>("recv_device") + ";" +
         node.attr<std::string>("tensor_name");
}

}  // namespace

std::string PartitionsToDot(const std::vector<DevicePartition>& partitions) {
  std::ostringstream out;
  out << "digraph partitions {\n  rankdir=TB; compound=true;\n"
      << "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", "
         "fontname=\"Helvetica\"];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=10];\n";
  std::map<std::string, std::string> sends;  // key -> DOT id
  for (size_t i = 0; i < partitions.size(); ++i) {
    WriteCluster(out, i, partitions[i]);
    for (const Node* node : partitions[i].graph->nodes())
      if (node->op() == "_Send") sends[Key(*node)] = Id(i, *node);
  }
  for (size_t i = 0; i < partitions.size(); ++i)
    for (const Node* node : partitions[i].graph->nodes()) {
      auto send = node->op() == "_Recv" ? sends.find(Key(*node)) : sends.end();
      if (send == sends.end()) continue;
      out << "  " << send->second << " -> " << Id(i, *node)
          << " [style=bold, color=\"#d62728\", fontcolor=\"#d62728\", label="
          << DotQuote(node->attr<std::string>("tensor_name")) << "];\n";
    }
  out << "}\n";
  return out.str();
}

}  // namespace dflow

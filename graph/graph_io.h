// Graphs on disk and on screen: the JSON graph file ("dflow.graph/1",
// documented in docs/graph-format.md) and Graphviz DOT export. JSON values are
// nlohmann::ordered_json, so files keep a readable key order.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "graph/graph.h"

namespace dflow {

inline constexpr std::string_view kGraphFormat = "dflow.graph/1";

// The graph as a JSON document; every attr is written (defaults included),
// so loading it back gives the identical graph.
nlohmann::ordered_json ToJson(const Graph& graph);
// Builds a graph from a JSON document. Nodes may appear in any order; they
// are added in a topological order (file order where it allows). Errors name
// `source` (the file), the node and the field.
std::shared_ptr<Graph> GraphFromJson(const nlohmann::ordered_json& doc,
                                     std::string_view source = "<json>");
// Parses JSON text (errors give the line and column) and calls GraphFromJson.
std::shared_ptr<Graph> ParseGraph(std::string_view text, std::string_view source = "<text>");

void SaveGraph(const Graph& graph, const std::string& path);
std::shared_ptr<Graph> LoadGraph(const std::string& path);

// One attr value in the graph file's encoding (also used by `dflow ops --json`
// for defaults), and back; decoding needs the declared type and throws
// kInvalidArgument describing a mismatch.
nlohmann::ordered_json AttrToJson(const AttrValue& value);
AttrValue AttrFromJson(const nlohmann::ordered_json& value, AttrType type);
// "number 2.5", "string \"abc\"": a wrong value as an error message shows it
// (type and text, cut to ~40 characters; never throws).
std::string DescribeJson(const nlohmann::ordered_json& value);

// What ToDot draws.
struct DotOptions {
  // > 0: the nodes under each name scope `collapse_depth` levels deep (and
  // any deeper) become one box "scope (N ops)", with the edges between such
  // boxes merged: a real network's training graph as its layers.
  int collapse_depth = 0;
  std::string only;    // non-empty: just the nodes whose names start with this
  bool shapes = true;  // label data edges with dtype and shape
};
// Graphviz DOT: one box per node labelled "name\nOp", filled by device,
// inside nested clusters, one per name scope; data edges labelled with dtype
// and shape, control edges dashed. With `only`, a node outside that feeds
// one inside is drawn as a plain ellipse.
std::string ToDot(const Graph& graph, const DotOptions& options = {});
// A DOT double-quoted string; "\n" in `text` stays a DOT line break.
std::string DotQuote(std::string_view text);

}  // namespace dflow

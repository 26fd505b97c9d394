// `dflow dot GRAPH.json`: the graph as Graphviz DOT on stdout
// (pipe into `dot -Tsvg > graph.svg`).
#include <iostream>
#include <memory>

#include "apps/dflow/commands.h"
#include "graph/graph_io.h"

namespace dflow::cli {

void AddDotCommand(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* dot = app.add_subcommand("dot", "Print a graph file as Graphviz DOT.");
  dot->add_option("graph", *path, "Graph file (JSON).")->required();
  dot->callback([path] { std::cout << ToDot(*LoadGraph(*path)); });
}

}  // namespace dflow::cli

// `dflow dot GRAPH.json`: the graph as Graphviz DOT on stdout
// (pipe into `dot -Tsvg > graph.svg`), name scopes as clusters;
// --collapse-scopes draws each scope as one box, so a real network's
// training graph reads as its layers.
#include <iostream>
#include <memory>

#include "apps/dflow/commands.h"
#include "graph/graph_io.h"

namespace dflow::cli {

void AddDotCommand(CLI::App& app) {
  struct Settings {
    std::string path;
    bool collapse = false;
    int depth = 1;
    DotOptions options;
    bool no_shapes = false;
  };
  auto s = std::make_shared<Settings>();
  CLI::App* dot = app.add_subcommand("dot", "Print a graph file as Graphviz DOT.");
  dot->add_option("graph", s->path, "Graph file (JSON).")->required();
  dot->add_flag("--collapse-scopes", s->collapse,
                "Draw the nodes under each name scope --depth levels deep as one box.");
  dot->add_option("--depth", s->depth, "Scope level that --collapse-scopes collapses at.")
      ->check(CLI::Range(1, 1000));
  dot->add_option("--only", s->options.only,
                  "Only the nodes whose names start with this (e.g. gradients/); their "
                  "inputs from elsewhere are drawn as dashed ellipses.");
  dot->add_flag("--no-shapes", s->no_shapes, "No dtype and shape labels on the edges.");
  dot->callback([s] {
    s->options.collapse_depth = s->collapse ? s->depth : 0;
    s->options.shapes = !s->no_shapes;
    std::cout << ToDot(*LoadGraph(s->path), s->options);
  });
}

}  // namespace dflow::cli

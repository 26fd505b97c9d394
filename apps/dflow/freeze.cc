// `dflow freeze GRAPH.json --output NAME... (--init | --checkpoint FILE) -o OUT.json`:
// gives the graph's variables their values (their initializers, then a
// checkpoint), and writes the part of the graph the outputs need with every
// variable it reads as a Const (graph/freeze.h). The frozen file is what to
// deploy: its batch norms fold into the convolutions when it runs.
#include <iostream>
#include <memory>

#include "apps/dflow/commands.h"
#include "graph/freeze.h"
#include "graph/graph_io.h"
#include "models/checkpoint.h"
#include "ops/state.h"

namespace dflow::cli {
namespace {

struct FreezeArgs {
  std::string graph;
  std::vector<std::string> outputs;
  bool init = false;
  std::string checkpoint;
  std::string out;
};

void Freeze(const FreezeArgs& args) {
  if (!args.init && args.checkpoint.empty())
    Fail(Code::kInvalidArgument, "freeze needs the variables' values: --init, --checkpoint FILE "
         "or both");
  std::shared_ptr<Graph> graph = LoadGraph(args.graph);
  Scope scope = Scope::ForGraph(graph);
  // The restore and init ops go into the loaded graph; FreezeGraph copies
  // only what the outputs need, so none of them reaches the frozen file.
  Node* init = args.init ? ops::GlobalVariablesInitializer(scope.NewSubScope("freeze")) : nullptr;
  std::unique_ptr<Saver> saver =
      args.checkpoint.empty() ? nullptr : std::make_unique<Saver>(scope.NewSubScope("freeze"));
  Session session(graph);
  if (init) session.Run({}, {}, {init});
  if (saver) saver->Restore(session, args.checkpoint);
  std::shared_ptr<Graph> frozen = FreezeGraph(session, args.outputs);
  SaveGraph(*frozen, args.out);
  std::cout << "froze " << args.graph << " to " << args.out << ": " << frozen->num_nodes()
            << " nodes\n";
}

}  // namespace

void AddFreezeCommand(CLI::App& app) {
  auto args = std::make_shared<FreezeArgs>();
  CLI::App* freeze = app.add_subcommand(
      "freeze", "Write the part of a graph that outputs need, variables as constants.");
  freeze->add_option("graph", args->graph, "Graph file (JSON).")->required();
  AddRepeatable(freeze, "--output", args->outputs, "A tensor or node to keep (repeatable).");
  freeze->add_flag("--init", args->init, "Give variables their initial values first.");
  freeze->add_option("--checkpoint", args->checkpoint, "Restore variables from this file.");
  freeze->add_option("-o,--out", args->out, "Frozen graph file to write (JSON).")->required();
  freeze->callback([args] {
    if (args->outputs.empty()) Fail(Code::kInvalidArgument, "freeze needs at least one --output");
    Freeze(*args);
  });
}

}  // namespace dflow::cli

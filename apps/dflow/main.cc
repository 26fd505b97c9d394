// dflow: run graph files, list ops, export DOT, freeze variables into
// constants, place and partition graphs, serve a worker task, launch
// data-parallel tasks. Exit status: 0 on success, 1 for bad input (arguments,
// files, graphs, feeds) or a failed task, 2 for an internal error.
#include <iostream>

#include "apps/common/program.h"
#include "apps/dflow/commands.h"
#include "dist/transport/zmq_transport.h"
#include "graph/status.h"

int main(int argc, char** argv) {
  dflow::dist::KeepFreedMemoryForReceives();  // servers receive tensors
  CLI::App app{"dflow: run and inspect TensorFlow-1-style dataflow graphs.", "dflow"};
  dflow::apps::SetUpProgram(app, "dflow");
  app.require_subcommand(1);
  dflow::cli::AddOpsCommand(app);
  dflow::cli::AddRunCommand(app);
  dflow::cli::AddDotCommand(app);
  dflow::cli::AddProfileCommand(app);
  dflow::cli::AddFreezeCommand(app);
  dflow::cli::AddQuantizeCommand(app);
  dflow::cli::AddPlaceCommands(app);
  dflow::cli::AddLaunchCommand(app);
  dflow::cli::AddServerCommand(app);
  dflow::cli::AddJobsCommand(app);
  dflow::cli::AddKeygenCommand(app);
  dflow::cli::AddPlotCommand(app);
  dflow::apps::HideEmptyDefaults(app);
  try {
    app.parse(argc, argv);  // the chosen subcommand's callback runs inside parse()
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "dflow: error: " << e.what() << "\n(run 'dflow --help' for usage)\n";
    return 1;
  } catch (const dflow::Error& e) {
    bool internal = e.code() == dflow::Code::kInternal;
    std::cerr << "dflow: " << (internal ? "internal error: " : "error: ") << e.message() << "\n";
    return internal ? 2 : 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "dflow: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "dflow: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

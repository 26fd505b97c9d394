// Internal to dist/training/ps_training.cc: the training ops a PsWorker adds to the
// replicated graph, and where they run.
#pragma once

#include "dist/training/ps_training.h"

namespace dflow::dist {

struct PsWorker::Ops {
  Output local_step;      // fed: the global step the gradients are computed at (int64 scalar)
  Output timeout_ms;      // fed: sync mode's deadline for the waits (int64 scalar)
  Output initial_step;    // the global step before this worker's first step
  Output next_step;       // fetched each step: the global step after it
  Output staleness;       // async: this update's staleness
  std::vector<Output> dropped_stale;  // sync: per accumulator
  std::vector<Node*> aborts;          // sync: per accumulator, run by a failing chief
  std::vector<Node*> set_steps;       // sync: per accumulator, fed `restored_step`
  Output restored_step;               // fed: the global step a restored run continues at
  Output global_step;                 // the optimizer's global step variable
  Node* init = nullptr;   // the chief's: every variable's initialiser
  std::vector<Output> variables;    // model, optimizer slots, global step
  std::vector<Output> initialized;  // IsVariableInitialized of each of those
  std::vector<std::string> variable_names;
  Output workers_done;    // on ps 0: how many workers finished; set (0) once the chief is ready
  Node* ready = nullptr;  // the chief's last start-up step: workers_done = 0
  Node* finish = nullptr;  // workers_done += 1
  Output stop_code;       // fed: 1 stop cleanly, 2 stop after an error
  std::vector<Node*> stops;  // one Assign per ps task; its server polls the variable
};

// Adds the ops of `options.mode` (and the control variables) to `scope`'s
// graph and sets every node's requested device.
std::unique_ptr<PsWorker::Ops> BuildPsTrainingOps(const Scope& scope,
                                                  const std::vector<autodiff::GradAndVar>& grads_and_vars,
                                                  autodiff::Optimizer& optimizer, const PsTask& task,
                                                  const PsTrainingOptions& options);

// The variable a ps task's server polls: the chief assigns it to stop the task.
std::string PsStopVariableName(int ps_task);

}  // namespace dflow::dist

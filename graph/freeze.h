// Freezing a trained graph for inference (TensorFlow's
// convert_variables_to_constants): a copy of the graph that keeps only what
// the given outputs need, each variable they read replaced by a Const that
// holds the variable's value in a session at the time of the call.
//
// Why a separate step rather than letting passes read variables: a variable
// can change between runs, a Const cannot, so only a frozen graph may have
// its weights rewritten (e.g. batch norms folded into convolutions,
// ops/passes/inference_passes.h). Freeze once after training or loading a
// checkpoint; later assignments to the variables do not reach the frozen graph.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/session.h"

namespace dflow {

// `outputs` are tensor or node names ("det/boxes", "y:1"). The copy keeps
// node names, attrs, devices and the graph seed; variables become Consts of
// the same name. Throws kNotFound for an unknown output, kInvalidArgument
// when an output needs a node that writes a variable (Assign, ...), and the
// session's error when a needed variable is not initialised.
std::shared_ptr<Graph> FreezeGraph(Session& session, const std::vector<std::string>& outputs);

}  // namespace dflow

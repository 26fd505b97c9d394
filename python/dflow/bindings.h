// What the files of the dflow._dflow extension share: graph handles that
// keep their graph alive, numpy <-> Tensor conversion (numpy_tensor.cc) and
// the layer bindings (layers.cc), the optimizers (training.cc); _dflow.cc
// defines the module.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <vector>

#include "graph/graph.h"
#include "graph/scope.h"
#include "graph/session.h"
#include "graph/tensor.h"

namespace dflow::python {

namespace py = pybind11;

struct NodeRef {
  std::shared_ptr<Graph> graph;
  Node* node;
};

struct OutputRef {
  std::shared_ptr<Graph> graph;
  Output output;
};

py::dtype NumpyDType(DType dtype);
DType FromNumpyDType(const py::dtype& dtype);
// The tensor's bytes as an array that keeps the tensor (its buffer) alive.
py::array ToNumpy(const Tensor& tensor);
// A tensor over the array's bytes (no copy) when it is C-contiguous and
// aligned, else over a contiguous copy; the tensor holds a reference to the
// array until its last handle goes.
Tensor FromNumpy(py::array array);
// An owned copy, for values the graph keeps (attrs, Const values).
Tensor CopyOf(const Tensor& tensor);

// The graph outputs the handles name.
std::vector<Output> Outputs(const std::vector<OutputRef>& refs);

// A session as Python holds it, with its graph. The session may belong to
// another object (a TrainingSession), which the pointer then keeps alive.
struct SessionHandle {
  std::shared_ptr<Graph> graph;
  std::shared_ptr<Session> session;
};

// A Session.run call's arguments from Python: fetches and targets are
// Outputs, Operations or names; feeds a list of (key, array) pairs.
struct RunArguments {
  FeedList feeds;
  std::vector<TensorName> fetches, targets;
};
RunArguments RunArgumentsFromPython(const py::list& fetches, const py::list& feeds, const py::list& targets);
py::list ToNumpyList(const std::vector<Tensor>& tensors);

// dflow.layers, the learning-rate schedules and the generated data.
void DefineLayers(py::module_& m);
// The optimizers and the data-parallel DistributedOptimizer (training.cc).
void DefineTraining(py::module_& m);

}  // namespace dflow::python

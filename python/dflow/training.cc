// dflow's optimizers for Python, and the data-parallel DistributedOptimizer
// (dist/training/distributed_optimizer.h) with the worker's place in its job.
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "autodiff/optimizers.h"
#include "dist/training/distributed_optimizer.h"
#include "python/dflow/bindings.h"

namespace dflow::python {
namespace {

std::unique_ptr<autodiff::Optimizer> MakeOptimizer(const std::string& kind, const OutputRef& lr,
                                                   const py::dict& options) {
  auto get = [&](const char* key, double fallback) {
    return options.contains(key) ? py::cast<double>(options[key]) : fallback;
  };
  autodiff::OptimizerOptions common{.weight_decay = get("weight_decay", 0),
                                    .clip_global_norm = get("clip_global_norm", 0)};
  if (kind == "GradientDescent")
    return std::make_unique<autodiff::GradientDescentOptimizer>(lr.output, common);
  if (kind == "Momentum")
    return std::make_unique<autodiff::MomentumOptimizer>(
        lr.output, get("momentum", 0.9),
        options.contains("use_nesterov") && py::cast<bool>(options["use_nesterov"]), common);
  if (kind == "Adam")
    return std::make_unique<autodiff::AdamOptimizer>(
        lr.output,
        autodiff::AdamOptions{.beta1 = get("beta1", 0.9), .beta2 = get("beta2", 0.999),
                              .epsilon = get("epsilon", 1e-8)},
        common);
  Fail(Code::kInvalidArgument, "unknown optimizer '", kind, "' (GradientDescent, Momentum, Adam)");
}

struct OptimizerHandle {
  std::shared_ptr<Graph> graph;
  std::unique_ptr<autodiff::Optimizer> optimizer;
};

// The wrapped optimizer lives as long as the wrapper; the Python side keeps
// the wrapper as long as its graph (the graph's ops reach its group).
struct DistributedHandle {
  std::shared_ptr<Graph> graph;
  std::unique_ptr<autodiff::Optimizer> optimizer;
  std::unique_ptr<dist::DistributedOptimizer> distributed;
};

}  // namespace

void DefineTraining(py::module_& m) {
  py::class_<OptimizerHandle>(m, "Optimizer")
      .def(py::init([](const std::string& kind, const OutputRef& lr, const py::dict& options) {
        return OptimizerHandle{lr.graph, MakeOptimizer(kind, lr, options)};
      }))
      .def("minimize", [](OptimizerHandle& o, const Scope& s, const OutputRef& loss,
                          const std::vector<OutputRef>& var_list) {
        return NodeRef{s.graph_ptr(), o.optimizer->Minimize(s, loss.output, Outputs(var_list))};
      });

  py::class_<DistributedHandle>(m, "DistributedOptimizer")
      .def(py::init([](const std::string& kind, const OutputRef& lr, const py::dict& options) {
        DistributedHandle handle{lr.graph, MakeOptimizer(kind, lr, options), nullptr};
        handle.distributed = std::make_unique<dist::DistributedOptimizer>(*handle.optimizer);
        return handle;
      }))
      .def("minimize", [](DistributedHandle& o, const Scope& s, const OutputRef& loss,
                          const std::vector<OutputRef>& var_list) {
        return NodeRef{s.graph_ptr(), o.distributed->Minimize(s, loss.output, Outputs(var_list))};
      })
      .def("broadcast_variables", [](DistributedHandle& o, const Scope& s) {
        return NodeRef{s.graph_ptr(), o.distributed->BroadcastVariables(s)};
      })
      .def_property_readonly("worker", [](const DistributedHandle& o) { return o.distributed->worker(); })
      .def_property_readonly("num_workers", [](const DistributedHandle& o) { return o.distributed->num_workers(); })
      .def("any_worker", [](DistributedHandle& o, bool flag) { return o.distributed->AnyWorker(flag); },
           py::call_guard<py::gil_scoped_release>())
      .def("finish", [](DistributedHandle& o) { o.distributed->Finish(); }, py::call_guard<py::gil_scoped_release>());

  m.def("worker_place", [] {
    dist::WorkerPlace place = dist::WorkerPlaceFromEnvironment();
    return py::make_tuple(place.worker, place.num_workers);
  });
}

}  // namespace dflow::python

// dflow's optimizers for Python, and the data-parallel DistributedOptimizer
// (dist/training/distributed_optimizer.h) with the worker's place in its
// job, the TrainingSession that runs its steps under either strategy, and
// the parameter-server tasks' serving loop.
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "autodiff/optimizers.h"
#include "dist/training/distributed_optimizer.h"
#include "dist/training/training_session.h"
#include "models/checkpoint.h"
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

// Keeps the graph alive while the session runs; Python's `session`
// property hands out SessionHandles that keep this alive.
struct TrainingSessionHandle {
  std::shared_ptr<Graph> graph;
  std::unique_ptr<dist::TrainingSession> session;
};

// The chief restores the variables the session trains from `path`, if
// given, after initialising them.
std::function<void(Session&, const std::vector<Output>&)> RestoreFrom(const Scope& scope, const std::string& path) {
  if (path.empty()) return {};
  return [scope, path](Session& session, const std::vector<Output>& variables) {
    Saver(scope, variables).Restore(session, path);
  };
}

void DefineTrainingSession(py::module_& m) {
  py::class_<TrainingSessionHandle, std::shared_ptr<TrainingSessionHandle>>(m, "TrainingSession")
      .def(py::init([](DistributedHandle& optimizer, const Scope& s, int64_t num_steps, const std::string& restore_from,
                       int num_threads) {
             dist::TrainingSessionOptions options{.num_steps = num_steps, .restore = RestoreFrom(s, restore_from)};
             if (num_threads > 0) options.session.num_threads = num_threads;
             auto handle = std::make_shared<TrainingSessionHandle>();
             handle->graph = s.graph_ptr();
             py::gil_scoped_release no_gil;  // the chief's start-up and the others' wait for it
             handle->session = std::make_unique<dist::TrainingSession>(s, *optimizer.distributed, std::move(options));
             return handle;
           }),
           py::arg("optimizer"), py::arg("scope"), py::arg("num_steps"), py::arg("restore_from") = "",
           py::arg("num_threads") = 0)
      .def("run", [](TrainingSessionHandle& h, const py::list& fetches, const py::list& feeds,
                     const py::list& targets) {
        RunArguments args = RunArgumentsFromPython(fetches, feeds, targets);
        DFLOW_REQUIRE(args.targets.empty(), "TrainingSession.run runs one training step (the train op); fetch ",
                      "tensors from it, or run other operations through its `session`");
        std::vector<Tensor> results;
        {
          py::gil_scoped_release no_gil;
          results = h.session->Run(std::move(args.feeds), args.fetches);
        }
        return ToNumpyList(results);
      })
      .def("should_stop", [](const TrainingSessionHandle& h) { return h.session->ShouldStop(); })
      .def_property_readonly("global_step", [](const TrainingSessionHandle& h) { return h.session->global_step(); })
      .def_property_readonly("next_step", [](const TrainingSessionHandle& h) { return h.session->next_step(); })
      .def_property_readonly("worker", [](const TrainingSessionHandle& h) { return h.session->worker(); })
      .def_property_readonly("num_workers", [](const TrainingSessionHandle& h) { return h.session->num_workers(); })
      .def_property_readonly("variables", [](const TrainingSessionHandle& h) {
        std::vector<OutputRef> out;
        for (const Output& v : h.session->variables()) out.push_back({h.graph, v});
        return out;
      })
      .def_property_readonly("session", [](const std::shared_ptr<TrainingSessionHandle>& h) {
        return SessionHandle{h->graph, std::shared_ptr<Session>(h, &h->session->session())};
      })
      .def("close", [](TrainingSessionHandle& h) { h.session->Close(); }, py::call_guard<py::gil_scoped_release>());

  m.def("serve_if_parameter_server", []() -> std::optional<int> {
    std::optional<dist::PsTask> task = dist::ParameterServerTask();
    if (!task) return std::nullopt;
    py::gil_scoped_release no_gil;
    return dist::ServeParameterServer(*task);
  });
}

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

  DefineTrainingSession(m);
  m.def("worker_place", [] {
    dist::WorkerPlace place = dist::WorkerPlaceFromEnvironment();
    return py::make_tuple(place.worker, place.num_workers);
  });
}

}  // namespace dflow::python

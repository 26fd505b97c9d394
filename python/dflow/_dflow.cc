// The Python extension module dflow._dflow (pybind11): the engine's graph,
// op registry, session, gradients, optimizers and checkpoints, in the small
// set of calls that python/dflow/__init__.py builds the TensorFlow-1-style
// Python API on. Graph objects (nodes, outputs) hold a reference to their
// graph, so a Python handle never outlives what it points to. Tensors become
// numpy arrays without a copy (the array keeps the tensor's buffer alive);
// C-contiguous numpy feeds become tensors without a copy (the tensor keeps
// the array alive). dflow errors become dflow.DflowError with the same
// message and a `code` ("InvalidArgument", ...). Session.run releases the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autodiff/gradients.h"
#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "graph/graph_io.h"
#include "graph/session.h"
#include "models/checkpoint.h"
#include "ops/ops.h"
#include "python/dflow/bindings.h"

namespace py = pybind11;

namespace dflow::python {
namespace {

std::optional<int64_t> DimOrNone(int64_t d) {
  return d < 0 ? std::nullopt : std::optional<int64_t>(d);
}

py::object ShapeToPython(const Shape& shape) {
  if (shape.unknown_rank()) return py::none();
  py::list dims;
  for (int64_t d : shape.dims()) dims.append(py::cast(DimOrNone(d)));
  return py::tuple(dims);
}

Shape ShapeFromPython(const py::handle& value) {
  if (value.is_none()) return Shape::Unknown();
  std::vector<int64_t> dims;
  for (py::handle d : value) dims.push_back(d.is_none() ? Shape::kUnknownDim : py::cast<int64_t>(d));
  return Shape(dims);
}

DType DTypeFromPython(const py::handle& value) {
  if (py::isinstance<DType>(value)) return py::cast<DType>(value);
  if (py::isinstance<py::str>(value)) return DTypeFromName(py::cast<std::string>(value));
  return FromNumpyDType(py::dtype::from_args(py::reinterpret_borrow<py::object>(value)));
}

// A Python value as the attr type the op declares.
AttrValue AttrFromPython(const AttrDef& def, const py::handle& value) {
  auto list = [&](auto convert) {
    using T = decltype(convert(value));
    std::vector<T> items;
    for (py::handle item : value) items.push_back(convert(item));
    return items;
  };
  switch (def.type) {
    case AttrType::kInt: return py::cast<int64_t>(value);
    case AttrType::kFloat: return py::cast<double>(value);
    case AttrType::kBool: return py::cast<bool>(value);
    case AttrType::kString: return py::cast<std::string>(value);
    case AttrType::kDType: return DTypeFromPython(value);
    case AttrType::kShape: return ShapeFromPython(value);
    case AttrType::kTensor: return CopyOf(FromNumpy(py::array::ensure(value)));
    case AttrType::kIntList: return list([](py::handle h) { return py::cast<int64_t>(h); });
    case AttrType::kFloatList: return list([](py::handle h) { return py::cast<double>(h); });
    case AttrType::kBoolList: return list([](py::handle h) { return py::cast<bool>(h); });
    case AttrType::kStringList: return list([](py::handle h) { return py::cast<std::string>(h); });
    case AttrType::kDTypeList: return list([](py::handle h) { return DTypeFromPython(h); });
    case AttrType::kShapeList: return list([](py::handle h) { return ShapeFromPython(h); });
    case AttrType::kTensorList:
      return list([](py::handle h) { return CopyOf(FromNumpy(py::array::ensure(h))); });
  }
  Fail(Code::kInternal, "attr '", def.name, "' has an unknown type");
}

py::object AttrToPython(const AttrValue& value) {
  return std::visit(
      [](const auto& v) -> py::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Shape>) return ShapeToPython(v);
        else if constexpr (std::is_same_v<T, Tensor>) return ToNumpy(v);
        else if constexpr (std::is_same_v<T, std::vector<Shape>>) {
          py::list items;
          for (const Shape& s : v) items.append(ShapeToPython(s));
          return items;
        } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
          py::list items;
          for (const Tensor& t : v) items.append(ToNumpy(t));
          return items;
        } else {
          return py::cast(v);
        }
      },
      value);
}

// An input given from Python: an Output, a Node (its output 0) or a value (a literal).
Input InputFromPython(const py::handle& value, const std::shared_ptr<Graph>& graph) {
  auto same_graph = [&](const std::shared_ptr<Graph>& g) {
    DFLOW_REQUIRE(g == graph, "an input belongs to another graph than the one the op is added to");
  };
  if (py::isinstance<OutputRef>(value)) {
    const auto& out = py::cast<const OutputRef&>(value);
    same_graph(out.graph);
    return out.output;
  }
  if (py::isinstance<NodeRef>(value)) {
    const auto& node = py::cast<const NodeRef&>(value);
    same_graph(node.graph);
    return Output(node.node);
  }
  return CopyOf(FromNumpy(py::array::ensure(value)));
}

// Adds `op` to the scope's graph: inputs flattened in the op's argument
// order (a list arg takes a list), attrs converted by their declared types.
NodeRef AddOp(const Scope& scope, const std::string& op, const py::list& inputs, const py::dict& attrs) {
  const OpDef& def = OpRegistry::Global().Get(op);
  const std::shared_ptr<Graph>& graph = scope.graph_ptr();
  std::vector<Input> flat;
  for (py::handle input : inputs) {
    if (py::isinstance<py::list>(input) || py::isinstance<py::tuple>(input)) {
      for (py::handle item : input) flat.push_back(InputFromPython(item, graph));
    } else {
      flat.push_back(InputFromPython(input, graph));
    }
  }
  AttrMap attr_map;
  for (auto [key, value] : attrs) {
    std::string name = py::cast<std::string>(key);
    const AttrDef* attr = def.FindAttr(name);
    if (!attr) {
      std::string known;
      for (const AttrDef& a : def.attrs) known += (known.empty() ? "" : ", ") + a.name;
      Fail(Code::kInvalidArgument, op, " has no attr '", name, "' (its attrs: ",
           known.empty() ? "none" : known, ")");
    }
    attr_map[name] = AttrFromPython(*attr, value);
  }
  return {graph, scope.AddOp(op, flat, std::move(attr_map))};
}

py::dict OpDefToPython(const OpDef& def) {
  auto args = [](const std::vector<ArgDef>& list) {
    py::list out;
    for (const ArgDef& a : list)
      out.append(py::dict(py::arg("name") = a.name, py::arg("is_list") = !a.number_attr.empty(),
                          py::arg("is_ref") = a.is_ref));
    return out;
  };
  py::list attrs;
  for (const AttrDef& a : def.attrs)
    attrs.append(py::dict(py::arg("name") = a.name, py::arg("type") = std::string(AttrTypeName(a.type)),
                          py::arg("required") = !a.default_value.has_value()));
  return py::dict(py::arg("name") = def.name, py::arg("inputs") = args(def.inputs),
                  py::arg("outputs") = args(def.outputs), py::arg("attrs") = attrs,
                  py::arg("doc") = def.doc, py::arg("signature") = def.Signature());
}


// --- session

TensorName NameFromPython(const py::handle& value) {
  if (py::isinstance<OutputRef>(value)) return py::cast<const OutputRef&>(value).output;
  if (py::isinstance<NodeRef>(value)) return py::cast<const NodeRef&>(value).node;
  return py::cast<std::string>(value);
}

py::list Run(SessionHandle& handle, const py::list& fetches, const py::list& feeds, const py::list& targets) {
  RunArguments args = RunArgumentsFromPython(fetches, feeds, targets);
  std::vector<Tensor> results;
  {
    py::gil_scoped_release no_gil;
    results = handle.session->Run(args.feeds, args.fetches, args.targets);
    args.feeds.clear();  // the adopted arrays' releases take the GIL
  }
  return ToNumpyList(results);
}

void DefineModule(py::module_& m) {
  static py::exception<Error> dflow_error(m, "DflowError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised) std::rethrow_exception(raised);
    } catch (const Error& e) {
      py::object error = py::reinterpret_borrow<py::object>(dflow_error.ptr())(e.what());
      error.attr("code") = std::string(CodeName(e.code()));
      PyErr_SetObject(dflow_error.ptr(), error.ptr());
    }
  });

  py::enum_<DType>(m, "DType")
      .value("float32", DType::kFloat32).value("float64", DType::kFloat64)
      .value("float16", DType::kFloat16).value("int8", DType::kInt8).value("uint8", DType::kUInt8)
      .value("int32", DType::kInt32).value("int64", DType::kInt64).value("bool", DType::kBool)
      .def_property_readonly("as_numpy_dtype", [](DType d) { return NumpyDType(d); });

  py::class_<NodeRef>(m, "Node")
      .def_property_readonly("name", [](const NodeRef& n) { return n.node->name(); })
      .def_property_readonly("op", [](const NodeRef& n) { return n.node->op(); })
      .def_property_readonly("device", [](const NodeRef& n) { return n.node->requested_device(); })
      .def_property_readonly("num_outputs", [](const NodeRef& n) { return n.node->num_outputs(); })
      .def("output", [](const NodeRef& n, int i) {
        DFLOW_REQUIRE(i >= 0 && i < n.node->num_outputs(), n.node->name(), " has ",
                      n.node->num_outputs(), " outputs, not ", i + 1);
        return OutputRef{n.graph, Output(n.node, i)};
      })
      .def("attr", [](const NodeRef& n, const std::string& name) {
        auto it = n.node->attrs().find(name);
        DFLOW_REQUIRE(it != n.node->attrs().end(), n.node->name(), " has no attr '", name, "'");
        return AttrToPython(it->second);
      })
      .def("__repr__", [](const NodeRef& n) { return "<dflow.Operation '" + n.node->name() + "' " + n.node->op() + ">"; });

  py::class_<OutputRef>(m, "Output")
      .def_property_readonly("name", [](const OutputRef& o) { return o.output.name(); })
      .def_property_readonly("node", [](const OutputRef& o) { return NodeRef{o.graph, o.output.node()}; })
      .def_property_readonly("index", [](const OutputRef& o) { return o.output.index(); })
      .def_property_readonly("dtype", [](const OutputRef& o) { return o.output.dtype(); })
      .def_property_readonly("shape", [](const OutputRef& o) { return ShapeToPython(o.output.shape()); })
      .def("__repr__", [](const OutputRef& o) {
        return "<dflow.Output '" + o.output.name() + "' " + std::string(DTypeName(o.output.dtype())) +
               o.output.shape().ToString() + ">";
      });

  py::class_<Scope>(m, "Scope")
      .def_static("new_root", &Scope::NewRootScope)
      .def("with_op_name", &Scope::WithOpName)
      .def("new_sub_scope", &Scope::NewSubScope)
      .def("with_device", &Scope::WithDevice)
      .def("with_control_dependencies", [](const Scope& s, const std::vector<NodeRef>& deps) {
        std::vector<Output> outputs;
        for (const NodeRef& d : deps) outputs.emplace_back(d.node);
        return s.WithControlDependencies(outputs);
      })
      .def("same_graph", [](const Scope& a, const Scope& b) { return a.graph_ptr() == b.graph_ptr(); })
      .def("set_seed", [](const Scope& s, int64_t seed) { s.graph().set_seed(seed); })
      .def("find", [](const Scope& s, const std::string& name) {
        Node* node = s.graph().FindNode(name);
        DFLOW_REQUIRE(node, "the graph has no node '", name, "'");
        return NodeRef{s.graph_ptr(), node};
      })
      .def("save", [](const Scope& s, const std::string& path) { SaveGraph(s.graph(), path); })
      .def_static("load", [](const std::string& path) { return Scope::ForGraph(LoadGraph(path)); })
      .def("metadata", [](const Scope& s) { return s.graph().metadata(); })
      .def("num_nodes", [](const Scope& s) { return s.graph().num_nodes(); });

  m.def("op_defs", [] {
    py::list defs;
    for (const OpDef* def : OpRegistry::Global().All()) defs.append(OpDefToPython(*def));
    return defs;
  });
  m.def("add_op", &AddOp, py::arg("scope"), py::arg("op"), py::arg("inputs"), py::arg("attrs"));
  m.def("placeholder", [](const Scope& s, DType dtype, const py::object& shape) {
    return OutputRef{s.graph_ptr(), ops::Placeholder(s, dtype, ShapeFromPython(shape))};
  });
  m.def("constant", [](const Scope& s, py::array value) {
    return OutputRef{s.graph_ptr(), ops::Const(s, CopyOf(FromNumpy(value)))};
  });
  m.def("variable", [](const Scope& s, const py::object& initial) {
    return OutputRef{s.graph_ptr(), ops::Variable(s, InputFromPython(initial, s.graph_ptr()))};
  });
  m.def("global_variables_initializer", [](const Scope& s) {
    return NodeRef{s.graph_ptr(), ops::GlobalVariablesInitializer(s)};
  });
  m.def("trainable_variables", [](const Scope& s) {
    std::vector<OutputRef> vars;
    for (const Output& v : autodiff::TrainableVariables(s.graph())) vars.push_back({s.graph_ptr(), v});
    return vars;
  });
  m.def("gradients", [](const Scope& s, const std::vector<OutputRef>& ys, const std::vector<OutputRef>& xs,
                        const std::vector<OutputRef>& grad_ys) {
    py::list out;
    for (const Output& g : autodiff::AddGradients(s, Outputs(ys), Outputs(xs), Outputs(grad_ys)))
      out.append(g.valid() ? py::cast(OutputRef{s.graph_ptr(), g}) : py::none());
    return out;
  });
  m.def("constant_learning_rate", [](const Scope& s, double lr) {
    return OutputRef{s.graph_ptr(), autodiff::ConstantLearningRate(s, lr)};
  });

  py::class_<SessionHandle>(m, "Session")
      .def(py::init([](const Scope& s, int num_threads, const std::string& target,
                       const std::vector<std::string>& devices, bool allow_soft_placement) {
             SessionOptions options;
             if (num_threads > 0) options.num_threads = num_threads;
             options.target = target;
             options.devices = devices;
             options.allow_soft_placement = allow_soft_placement;
             return SessionHandle{s.graph_ptr(), std::make_shared<Session>(s.graph_ptr(), options)};
           }),
           py::arg("scope"), py::arg("num_threads") = 0, py::arg("target") = "",
           py::arg("devices") = std::vector<std::string>{}, py::arg("allow_soft_placement") = false)
      .def("run", &Run, py::arg("fetches"), py::arg("feeds"), py::arg("targets"));

  py::class_<Saver>(m, "Saver")
      .def(py::init([](const Scope& s, const std::vector<OutputRef>& variables, int max_to_keep) {
             SaverOptions options;
             if (max_to_keep > 0) options.max_to_keep = max_to_keep;
             return variables.empty() ? Saver(s, options) : Saver(s, Outputs(variables), options);
           }),
           py::arg("scope"), py::arg("variables"), py::arg("max_to_keep") = 0)
      .def("save", [](const Saver& saver, SessionHandle& session, const std::string& path,
                      std::optional<int64_t> global_step) { return saver.Save(*session.session, path, global_step); },
           py::arg("session"), py::arg("path"), py::arg("global_step") = py::none())
      .def("restore", [](const Saver& saver, SessionHandle& session, const std::string& path) {
        saver.Restore(*session.session, path);
      });
  m.def("latest_checkpoint", [](const std::string& dir) { return LatestCheckpoint(dir); });
  DefineLayers(m);
  DefineTraining(m);
}

}  // namespace

RunArguments RunArgumentsFromPython(const py::list& fetches, const py::list& feeds, const py::list& targets) {
  RunArguments args;
  for (py::handle pair : feeds) {
    auto item = py::reinterpret_borrow<py::tuple>(pair);
    args.feeds.emplace_back(NameFromPython(item[0]), FromNumpy(py::array::ensure(item[1])));
  }
  for (py::handle f : fetches) args.fetches.push_back(NameFromPython(f));
  for (py::handle t : targets) args.targets.push_back(NameFromPython(t));
  return args;
}

py::list ToNumpyList(const std::vector<Tensor>& tensors) {
  py::list out;
  for (const Tensor& t : tensors) out.append(ToNumpy(t));
  return out;
}

std::vector<Output> Outputs(const std::vector<OutputRef>& refs) {
  std::vector<Output> outputs;
  for (const OutputRef& r : refs) outputs.push_back(r.output);
  return outputs;
}

}  // namespace dflow::python

PYBIND11_MODULE(_dflow, m) {
  m.doc() = "dflow's engine for Python; use the dflow package, which builds on this module.";
  dflow::python::DefineModule(m);
}

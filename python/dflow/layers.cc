// dflow.layers (the C++ models/ layers), learning-rate schedules and the
// spirals data for the dflow._dflow extension.
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "autodiff/learning_rate.h"
#include "models/data/spirals.h"
#include "models/layers.h"
#include "python/dflow/bindings.h"

namespace dflow::python {
namespace {

models::Activation ActivationOf(const std::string& name) {
  if (name.empty() || name == "none") return models::Activation::kNone;
  if (name == "relu") return models::Activation::kRelu;
  if (name == "tanh") return models::Activation::kTanh;
  if (name == "sigmoid") return models::Activation::kSigmoid;
  Fail(Code::kInvalidArgument, "activation '", name, "' is not one of none, relu, tanh, sigmoid");
}

}  // namespace

void DefineLayers(py::module_& m) {
  m.def("dense", [](const Scope& s, const OutputRef& x, int64_t units, const std::string& activation,
                    int64_t seed) {
    models::DenseLayer layer = models::Dense(s, x.output, units, {.activation = ActivationOf(activation), .seed = seed});
    return std::vector<OutputRef>{{s.graph_ptr(), layer.output}, {s.graph_ptr(), layer.kernel},
                                  {s.graph_ptr(), layer.bias}};
  });
  m.def("conv2d", [](const Scope& s, const OutputRef& x, int64_t filters, int64_t kernel, int64_t stride,
                     int64_t padding, int64_t groups, bool bias, const std::string& activation) {
    models::ConvLayer layer = models::Conv2D(
        s, x.output, filters, kernel,
        {.stride = stride, .padding = padding, .groups = groups, .bias = bias, .activation = ActivationOf(activation)});
    py::list out;
    out.append(OutputRef{s.graph_ptr(), layer.output});
    out.append(OutputRef{s.graph_ptr(), layer.filter});
    out.append(bias ? py::cast(OutputRef{s.graph_ptr(), layer.bias}) : py::none());
    return out;
  });
  m.def("batch_norm", [](const Scope& s, const OutputRef& x, bool training, double momentum, double epsilon) {
    models::BatchNormLayer layer = models::BatchNorm(s, x.output, {.training = training, .momentum = momentum, .epsilon = epsilon});
    std::vector<OutputRef> updates;
    for (const Output& u : layer.updates) updates.push_back({s.graph_ptr(), u});
    return py::make_tuple(OutputRef{s.graph_ptr(), layer.output}, updates);
  });
  m.def("global_step", [](const Scope& s) { return OutputRef{s.graph_ptr(), autodiff::GetOrCreateGlobalStep(s)}; });
  m.def("cosine_decay", [](const Scope& s, double lr, const OutputRef& step, int64_t decay_steps, double alpha) {
    return OutputRef{s.graph_ptr(), autodiff::CosineDecay(s, lr, step.output, {.decay_steps = decay_steps, .alpha = alpha})};
  });
  m.def("spirals", [](int64_t points_per_class, int classes, double noise, uint64_t seed) {
    models::LabelledPoints data = models::MakeSpirals(
        {.points_per_class = points_per_class, .classes = classes, .noise = noise, .seed = seed});
    return py::make_tuple(ToNumpy(data.points), ToNumpy(data.labels));
  });
}

}  // namespace dflow::python

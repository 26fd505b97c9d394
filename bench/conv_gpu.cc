// The GPU convolutions layer by layer: for each convolution of CountNet
// (batch 8, 224x224) and the non-depthwise, non-pointwise ones of
// MobileNetV1-SSD300 (batch 4), the forward pass and both gradients with
// im2col + cuBLAS (the previous kernels) and with the implicit GEMM, beside
// a cuBLAS GEMM of the im2col shape (the same multiply-adds on operands
// already in memory: the ceiling a convolution built on cuBLAS could reach).
// Each op runs alone in a step, inputs in GPU variables; the time is the
// mean of --steps steps after 3 warm-up steps, ended by fetching a tiny GPU
// variable (the GPU's one stream runs the steps in order; the copy back waits
// for them). The outputs of the two
// algorithms are compared too (normalised max difference).
//   bench_conv_gpu [--steps 20] [--only countnet|mbv1ssd]
// Prints a table, then one JSON line per convolution and pass.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>

#include <CLI/CLI.hpp>

#include "graph/session.h"
#include "ops/ops.h"

namespace {

using namespace dflow;

struct Layer {
  std::string net, name;
  int64_t batch, h, w, c, k, o, stride;
};

std::vector<Layer> Layers() {
  std::vector<Layer> layers;
  // CountNet's three columns: (kernel 1, kernel 2, channels 1, channels 2).
  const int64_t columns[3][4] = {{9, 7, 16, 32}, {7, 5, 20, 40}, {5, 3, 24, 48}};
  for (int i = 0; i < 3; ++i) {
    auto [k1, k2, c1, c2] = columns[i];
    std::string col = "column" + std::to_string(i + 1) + "/";
    layers.push_back({"countnet", col + "conv1", 8, 224, 224, 3, k1, c1, 1});
    layers.push_back({"countnet", col + "conv2", 8, 112, 112, c1, k2, c2, 1});
    layers.push_back({"countnet", col + "conv3", 8, 56, 56, c2, k2, c1, 1});
    layers.push_back({"countnet", col + "conv4", 8, 56, 56, c1, k2, c1 / 2, 1});
    // The transposed convolutions, as the convolutions whose gradient they are.
    layers.push_back({"countnet", col + "up1", 8, 112, 112, c1 / 2, k2, c1 / 2, 2});
    layers.push_back({"countnet", col + "up2", 8, 224, 224, c1, k2, c1 / 2, 2});
  }
  layers.push_back({"mbv1ssd", "conv0", 4, 300, 300, 3, 3, 32, 2});
  layers.push_back({"mbv1ssd", "extra1", 4, 10, 10, 256, 3, 512, 2});
  layers.push_back({"mbv1ssd", "cls0 (19x19)", 4, 19, 19, 512, 3, 54, 1});
  layers.push_back({"mbv1ssd", "cls1 (10x10)", 4, 10, 10, 1024, 3, 54, 1});
  layers.push_back({"mbv1ssd", "reg0 (19x19)", 4, 19, 19, 512, 3, 24, 1});
  return layers;
}

Tensor Random(const Shape& shape, uint64_t seed) {
  Tensor t(DType::kFloat32, shape);
  std::mt19937 random(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = uniform(random);
  return t;
}

Tensor Sizes(const Shape& shape) {
  std::vector<int32_t> dims;
  for (int64_t d : shape.dims()) dims.push_back(static_cast<int32_t>(d));
  return Tensor::FromVector<int32_t>(dims);
}

// A GPU variable holding `value`, with its initialiser added to `init`.
Output GpuVariable(const Scope& scope, const std::string& name, const Tensor& value,
                   std::vector<TensorName>& init) {
  Output v = ops::Variable(scope.WithOpName(name), value.shape(), DType::kFloat32);
  init.push_back(ops::Assign(scope.WithOpName(name + "/init"), v, ops::Const(scope, value)).name());
  return v;
}

enum class Pass { kForward, kInput, kFilter, kGemm };
const char* PassName(Pass p) {
  switch (p) {
    case Pass::kForward: return "forward";
    case Pass::kInput: return "input grad";
    case Pass::kFilter: return "filter grad";
    case Pass::kGemm: return "gemm";
  }
  return "";
}

struct Measured {
  double ms = 0;
  Tensor output;
};

// Builds the op of `pass` for `layer` (or the cuBLAS GEMM of `gemm` [m, k, n])
// on the GPU and times it.
Measured Measure(const Layer& layer, Pass pass, int steps, const std::vector<int64_t>& gemm = {}) {
  Scope scope = Scope::NewRootScope().WithDevice("/device:GPU:0");
  std::vector<TensorName> init;
  const int64_t out_h = (layer.h + layer.stride - 1) / layer.stride,
                out_w = (layer.w + layer.stride - 1) / layer.stride;
  Shape x_shape{layer.batch, layer.h, layer.w, layer.c}, w_shape{layer.k, layer.k, layer.c, layer.o},
      y_shape{layer.batch, out_h, out_w, layer.o};
  ops::Conv2DAttrs attrs;
  attrs.strides = {1, static_cast<int>(layer.stride), static_cast<int>(layer.stride), 1};
  Output out;
  switch (pass) {
    case Pass::kForward:
      out = ops::Conv2D(scope.WithOpName("op"), GpuVariable(scope, "x", Random(x_shape, 1), init),
                        GpuVariable(scope, "w", Random(w_shape, 2), init), attrs);
      break;
    case Pass::kInput:
      out = ops::Conv2DBackpropInput(scope.WithOpName("op"), ops::Const(scope, Sizes(x_shape)),
                                     GpuVariable(scope, "w", Random(w_shape, 2), init),
                                     GpuVariable(scope, "dy", Random(y_shape, 3), init), attrs);
      break;
    case Pass::kFilter:
      out = ops::Conv2DBackpropFilter(scope.WithOpName("op"),
                                      GpuVariable(scope, "x", Random(x_shape, 1), init),
                                      ops::Const(scope, Sizes(w_shape)),
                                      GpuVariable(scope, "dy", Random(y_shape, 3), init), attrs);
      break;
    case Pass::kGemm:
      out = ops::MatMul(scope.WithOpName("op"), GpuVariable(scope, "a", Random(Shape{gemm[0], gemm[1]}, 4), init),
                        GpuVariable(scope, "b", Random(Shape{gemm[1], gemm[2]}, 5), init));
      break;
  }
  // Fetching a variable copies it back from the GPU, which waits for the
  // stream (a Const's value would be taken from the graph without waiting).
  Output tiny = GpuVariable(scope, "tiny", Tensor::FromVector<float>({1}), init);
  Session session(scope, SessionOptions{.devices = {"/device:GPU:0"}});
  session.Run({}, {}, init);
  Measured m;
  if (pass != Pass::kGemm) m.output = session.Run({out.name()})[0];
  auto step = [&] { session.Run({}, {}, {out.node()->name()}); };
  for (int i = 0; i < 3; ++i) step();
  session.Run({tiny.name()});
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  session.Run({tiny.name()});
  m.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / steps;
  return m;
}

double MaxNormalisedDifference(const Tensor& a, const Tensor& b) {
  double scale = 1, diff = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i) scale = std::max<double>(scale, std::fabs(b.data<float>()[i]));
  for (int64_t i = 0; i < a.NumElements(); ++i)
    diff = std::max<double>(diff, std::fabs(a.data<float>()[i] - b.data<float>()[i]));
  return diff / scale;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GPU convolutions layer by layer: im2col + cuBLAS, implicit GEMM, cuBLAS ceiling"};
  int steps = 20;
  std::string only;
  app.add_option("--steps", steps, "timed steps per measurement");
  app.add_option("--only", only, "countnet or mbv1ssd (default: both)");
  CLI11_PARSE(app, argc, argv);
  std::cout << std::left << std::setw(30) << "layer" << std::setw(13) << "pass" << std::right
            << std::setw(11) << "im2col ms" << std::setw(13) << "implicit ms" << std::setw(11)
            << "cuBLAS ms" << std::setw(12) << "GFLOP/s" << std::setw(11) << "diff\n";
  std::vector<std::string> json;
  for (const Layer& layer : Layers()) {
    if (!only.empty() && layer.net != only) continue;
    const int64_t out_h = (layer.h + layer.stride - 1) / layer.stride,
                  out_w = (layer.w + layer.stride - 1) / layer.stride;
    const int64_t rows = layer.batch * out_h * out_w, patch = layer.k * layer.k * layer.c;
    const double flops = 2.0 * rows * patch * layer.o;
    for (Pass pass : {Pass::kForward, Pass::kInput, Pass::kFilter}) {
      std::vector<int64_t> gemm = pass == Pass::kForward ? std::vector<int64_t>{rows, patch, layer.o}
                                  : pass == Pass::kInput ? std::vector<int64_t>{rows, layer.o, patch}
                                                         : std::vector<int64_t>{patch, rows, layer.o};
      setenv("DFLOW_CONV_ALGORITHM", "im2col", 1);
      Measured im2col = Measure(layer, pass, steps);
      setenv("DFLOW_CONV_ALGORITHM", "implicit", 1);
      Measured implicit = Measure(layer, pass, steps);
      unsetenv("DFLOW_CONV_ALGORITHM");
      Measured ceiling = Measure(layer, Pass::kGemm, steps, gemm);
      double diff = MaxNormalisedDifference(implicit.output, im2col.output);
      std::cout << std::left << std::setw(30) << (layer.net + " " + layer.name) << std::setw(13)
                << PassName(pass) << std::right << std::fixed << std::setprecision(3) << std::setw(11)
                << im2col.ms << std::setw(13) << implicit.ms << std::setw(11) << ceiling.ms
                << std::setprecision(0) << std::setw(12) << flops / (implicit.ms * 1e6)
                << std::scientific << std::setprecision(1) << std::setw(11) << diff << "\n"
                << std::defaultfloat;
      std::ostringstream line;
      line << "{\"net\": \"" << layer.net << "\", \"layer\": \"" << layer.name << "\", \"pass\": \""
           << PassName(pass) << "\", \"im2col_ms\": " << im2col.ms << ", \"implicit_ms\": " << implicit.ms
           << ", \"cublas_ms\": " << ceiling.ms << ", \"gflop\": " << flops / 1e9
           << ", \"max_normalised_difference\": " << diff << "}";
      json.push_back(line.str());
    }
  }
  for (const std::string& line : json) std::cout << line << "\n";
  return 0;
}

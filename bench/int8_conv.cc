// The fused int8 convolutions (ops/quant.h) against the float ones they
// replace (_FusedConv2D: convolution + bias + ReLU6, as inference runs
// MobileNet-SSD), op for op through a Session, on the layer shapes of
// MobileNet-SSD at 300x300, batch 1, one thread: milliseconds per call, giga
// operations per second (a multiply-add counts as two) and the int8 / float
// ratio, the int8 op on every instruction set the CPU has (the float op on
// the best set for floats).
//   bench_int8_conv [--reps N]
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/timing.h"
#include "graph/session.h"
#include "ops/conv.h"
#include "ops/cpu/cpu_isa.h"
#include "ops/quant.h"
#include "ops/state.h"

namespace {

using namespace dflow;

struct Layer {
  const char* name;
  int64_t size, in_c, out_c, kernel, stride;
  bool depthwise;
};

// Backbone layers of every kind and size, and a 3x3 head.
const Layer kLayers[] = {{"conv0 3x3/2 3->32 @300", 300, 3, 32, 3, 2, false},
                         {"dw1 3x3 32 @150", 150, 32, 32, 3, 1, true},
                         {"pw1 1x1 32->64 @150", 150, 32, 64, 1, 1, false},
                         {"dw2 3x3/2 64 @150", 150, 64, 64, 3, 2, true},
                         {"pw3 1x1 128->128 @75", 75, 128, 128, 1, 1, false},
                         {"pw6 1x1 256->512 @38", 38, 256, 512, 1, 1, false},
                         {"dw12 3x3/2 512 @19", 19, 512, 512, 3, 2, true},
                         {"pw13 1x1 1024->1024 @10", 10, 1024, 1024, 1, 1, false},
                         {"class head 3x3 1024->126 @19", 19, 1024, 126, 3, 1, false}};

Shape FilterShape(const Layer& l) {
  return l.depthwise ? Shape{l.kernel, l.kernel, l.in_c, 1} : Shape{l.kernel, l.kernel, l.in_c, l.out_c};
}

int64_t OutSize(const Layer& l) { return (l.size + l.stride - 1) / l.stride; }

double Gops(const Layer& l, double seconds) {
  const double macs = static_cast<double>(OutSize(l)) * OutSize(l) * l.out_c * l.kernel * l.kernel *
                      (l.depthwise ? 1 : l.in_c);
  return 2 * macs / seconds * 1e-9;
}

ops::Conv2DAttrs ConvAttrs(const Layer& l) {
  return {.strides = {1, static_cast<int>(l.stride), static_cast<int>(l.stride), 1}};
}

template <typename T>
Tensor Random(DType dtype, const Shape& shape, std::mt19937& rng, int lo, int hi) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<T>()[i] = static_cast<T>(lo + static_cast<int>(rng() % (hi - lo + 1)));
  return t;
}

// Seconds per call of the float layer: _FusedConv2D with bias and ReLU6.
double FloatSeconds(const Layer& l, int reps, std::mt19937& rng) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DType::kFloat32, Shape{1, l.size, l.size, l.in_c});
  Tensor w = Random<float>(DType::kFloat32, FilterShape(l), rng, -3, 3);
  if (l.depthwise) w = w.Reshaped(Shape{l.kernel, l.kernel, 1, l.in_c});
  Output y = ops::FusedConv2D(s, x, w, Tensor::Zeros(DType::kFloat32, {l.out_c}), ConvAttrs(l), "Relu6");
  Session session(s, {.num_threads = 1});
  Tensor input = Random<float>(DType::kFloat32, Shape{1, l.size, l.size, l.in_c}, rng, 0, 6);
  return bench::Timed([&] { session.Run({{x, input}}, {y}); }, reps);
}

// Seconds per call of the int8 layer, with its output range frozen to [0, 6].
double Int8Seconds(const Layer& l, int reps, std::mt19937& rng) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DType::kUInt8, Shape{1, l.size, l.size, l.in_c});
  auto scalar = [](float v) { return Tensor::Scalar(v); };
  auto y = ops::QuantizedConv2DWithBiasAndRequantize(
      s, x, Random<int8_t>(DType::kInt8, FilterShape(l), rng, -127, 127), Tensor::Zeros(DType::kFloat32, {l.out_c}),
      scalar(-1), scalar(6), scalar(-0.5f), scalar(0.5f), scalar(0), scalar(6),
      {.conv = ConvAttrs(l), .depthwise = l.depthwise});
  Session session(s, {.num_threads = 1});
  Tensor input = Random<uint8_t>(DType::kUInt8, Shape{1, l.size, l.size, l.in_c}, rng, 0, 255);
  return bench::Timed([&] { session.Run({{x, input}}, {y.output}); }, reps);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 20;
  CLI::App app("The fused int8 convolutions against the float ones, MobileNet-SSD's layers, batch 1, one thread.");
  app.add_option("--reps", reps, "Timed calls per measurement")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const std::vector<cpu::CpuIsa> isas = cpu::SupportedCpuIsas();
  std::printf("%-30s %15s", "layer", "fp32 ms (GOPS)");
  for (cpu::CpuIsa isa : isas) std::printf(" %22s", (std::string("int8 ") + cpu::CpuIsaName(isa) + " ms (GOPS)").c_str());
  std::printf("  best ratio\n");
  std::mt19937 rng(1);
  double float_total = 0, int8_total = 0;
  for (const Layer& l : kLayers) {
    cpu::SetActiveCpuIsa(isas.back());
    const double fp32 = FloatSeconds(l, reps, rng);
    std::printf("%-30s %7.3f (%5.1f)", l.name, fp32 * 1e3, Gops(l, fp32));
    double best = 1e30;
    for (cpu::CpuIsa isa : isas) {
      cpu::SetActiveCpuIsa(isa);
      const double int8 = Int8Seconds(l, reps, rng);
      best = std::min(best, int8);
      std::printf(" %14.3f (%5.1f)", int8 * 1e3, Gops(l, int8));
    }
    float_total += fp32;
    int8_total += best;
    std::printf("  %9.2fx\n", fp32 / best);
  }
  std::printf("%-30s %7.3f %15s %.3f ms on the best set: %.2fx\n", "these layers together", float_total * 1e3, "int8",
              int8_total * 1e3, float_total / int8_total);
  return 0;
}

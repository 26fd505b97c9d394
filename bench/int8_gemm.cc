// The int8 product (ops/cpu/int8_gemm.h) against the float one it replaces
// (FixedRhsGemm, ops/cpu/gemm_packed.h) on the shapes of MobileNet-SSD's
// convolutions at 300x300 (m output pixels, k = taps x input channels, n
// output channels), one thread, every instruction set the CPU has: giga
// operations per second (a multiply-add counts as two) and the int8 / float
// ratio. The float kernel runs on the best set for floats.
//   bench_int8_gemm [--reps N]
#include <cstdio>
#include <random>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/timing.h"
#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/gemm_packed.h"
#include "ops/cpu/int8_gemm.h"

namespace {

using namespace dflow;

struct Shape {
  const char* layer;
  int64_t m, k, n;
};

// Pointwise convolutions of the MobileNet backbone and a 3x3 head (im2col's k).
const Shape kShapes[] = {{"block1 pointwise 150x150", 22500, 32, 64},
                         {"block3 pointwise 75x75", 5625, 128, 128},
                         {"block6 pointwise 38x38", 1444, 256, 512},
                         {"block12 pointwise 19x19", 361, 512, 1024},
                         {"block13 pointwise 10x10", 100, 1024, 1024},
                         {"class head 3x3 19x19", 361, 9 * 1024, 126}};

double Gops(const Shape& s, double seconds) { return 2.0 * s.m * s.k * s.n / seconds * 1e-9; }

}  // namespace

int main(int argc, char** argv) {
  int reps = 20;
  CLI::App app("int8 vs float GEMM on MobileNet-SSD's convolution shapes, one thread, per instruction set.");
  app.add_option("--reps", reps, "Timed calls per measurement")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::vector<cpu::CpuIsa> isas = cpu::SupportedCpuIsas();
  std::printf("%-28s %10s", "shape (m x k x n)", "fp32 GOPS");
  for (cpu::CpuIsa isa : isas) std::printf(" %14s", (std::string("int8 ") + cpu::CpuIsaName(isa)).c_str());
  std::printf("  best ratio\n");
  std::mt19937 rng(1);
  for (const Shape& s : kShapes) {
    std::vector<float> af(s.m * s.k), bf(s.k * s.n), cf(s.m * s.n);
    std::vector<uint8_t> a8(s.m * s.k);
    std::vector<int8_t> b8(s.k * s.n);
    std::vector<int32_t> c32(s.m * s.n);
    for (size_t i = 0; i < af.size(); ++i) af[i] = static_cast<float>(a8[i] = static_cast<uint8_t>(rng()));
    for (size_t i = 0; i < bf.size(); ++i) bf[i] = static_cast<float>(b8[i] = static_cast<int8_t>(rng()));
    cpu::SetActiveCpuIsa(isas.back());
    cpu::FixedRhsGemm<float> rhs_f(bf.data(), s.k, s.n, false);
    const double fp32 = Gops(s, bench::Timed([&] { rhs_f.Multiply(af.data(), s.m, cf.data()); }, reps));
    std::printf("%-28s %10.1f", s.layer, fp32);
    double best = 0;
    for (cpu::CpuIsa isa : isas) {
      cpu::SetActiveCpuIsa(isa);
      cpu::Int8Rhs rhs(b8.data(), s.k, s.n);
      const double int8 = Gops(s, bench::Timed([&] { rhs.Multiply(a8.data(), s.m, 3, c32.data()); }, reps));
      best = std::max(best, int8);
      std::printf(" %14.1f", int8);
    }
    std::printf("  %9.2fx\n", best / fp32);
  }
  return 0;
}

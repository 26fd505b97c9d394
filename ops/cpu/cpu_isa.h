// Which vector instructions the CPU kernels written for several instruction
// sets use (the register-tiled GEMMs: gemm_packed.cc, gemm_long_k.cc). They
// are compiled for each set in one build, and the best one the running CPU
// has is chosen at run time, so a library built for the baseline x86-64
// (the installed default) still multiplies with AVX2 or AVX-512 where the
// machine has them. DFLOW_CPU_ISA=generic|avx2|avx512 forces one (to compare,
// or to reproduce another machine's results: FMA rounds differently).
#pragma once

#include <string>
#include <vector>

namespace dflow::cpu {

enum class CpuIsa {
  kGeneric,  // the compiler's baseline: SSE2 on x86-64, whatever it is elsewhere
  kAvx2,     // AVX2 + FMA (Haswell, Zen and later)
  kAvx512,   // AVX-512 F/VL/BW/DQ + FMA (Skylake-SP, Ice Lake, Zen 4 and later)
};

const char* CpuIsaName(CpuIsa isa);
// Those this CPU can run, best last (always at least kGeneric).
std::vector<CpuIsa> SupportedCpuIsas();
// The set in use: DFLOW_CPU_ISA when set (an unknown name, or one the CPU
// lacks, throws kInvalidArgument naming what it has), else the best one.
CpuIsa ActiveCpuIsa();
// For tests and benchmarks: use `isa` from now on (it must be supported).
// Objects that packed data for another set (FixedRhsGemm) keep theirs.
void SetActiveCpuIsa(CpuIsa isa);

}  // namespace dflow::cpu

// Which vector instructions the CPU kernels written for several instruction
// sets use (the register-tiled float GEMMs: gemm_packed.cc, gemm_long_k.cc;
// the int8 GEMM: int8_gemm.cc). They
// are compiled for each set in one build, and the best one the running CPU
// has is chosen at run time, so a library built for the baseline x86-64
// (the installed default) still multiplies with AVX2 or AVX-512 where the
// machine has them. DFLOW_CPU_ISA=generic|avx2|avx_vnni|avx512|avx512_vnni
// forces one (to compare, or to reproduce another machine's float results:
// FMA rounds differently). The VNNI sets add int8 dot products (u8 x s8 in
// groups of 4) to the set before them; float kernels run as that set.
#pragma once

#include <string>
#include <vector>

namespace dflow::cpu {

enum class CpuIsa {
  kGeneric,     // the compiler's baseline: SSE2 on x86-64, whatever it is elsewhere
  kAvx2,        // AVX2 + FMA (Haswell, Zen and later)
  kAvxVnni,     // AVX2 + FMA + AVX-VNNI (Alder Lake, Sapphire Rapids, Zen 5)
  kAvx512,      // AVX-512 F/VL/BW/DQ + FMA (Skylake-SP, Zen 4 and later)
  kAvx512Vnni,  // the same + AVX512-VNNI (Cascade Lake, Ice Lake, Sapphire Rapids, Zen 4)
};

// The set a float kernel runs as: the VNNI sets add nothing for floats.
inline CpuIsa FloatIsa(CpuIsa isa) {
  if (isa == CpuIsa::kAvxVnni) return CpuIsa::kAvx2;
  if (isa == CpuIsa::kAvx512Vnni) return CpuIsa::kAvx512;
  return isa;
}

const char* CpuIsaName(CpuIsa isa);
// Those this CPU can run, in the enum's order, best last (always at least
// kGeneric).
std::vector<CpuIsa> SupportedCpuIsas();
// The set in use: DFLOW_CPU_ISA when set (an unknown name, or one the CPU
// lacks, throws kInvalidArgument naming what it has), else the best one.
CpuIsa ActiveCpuIsa();
// For tests and benchmarks: use `isa` from now on (it must be supported).
// Objects that packed data for another set (FixedRhsGemm) keep theirs.
void SetActiveCpuIsa(CpuIsa isa);

}  // namespace dflow::cpu

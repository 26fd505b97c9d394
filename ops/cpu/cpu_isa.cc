#include "ops/cpu/cpu_isa.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>

#include "graph/status.h"

namespace dflow::cpu {
namespace {

bool Supported(CpuIsa isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  switch (isa) {
    case CpuIsa::kGeneric: return true;
    case CpuIsa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuIsa::kAvxVnni: return Supported(CpuIsa::kAvx2) && __builtin_cpu_supports("avxvnni");
    case CpuIsa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("fma");
    case CpuIsa::kAvx512Vnni: return Supported(CpuIsa::kAvx512) && __builtin_cpu_supports("avx512vnni");
  }
  return false;
#else
  return isa == CpuIsa::kGeneric;  // the variants are x86-64 instruction sets
#endif
}

constexpr CpuIsa kAllIsas[] = {CpuIsa::kGeneric, CpuIsa::kAvx2, CpuIsa::kAvxVnni, CpuIsa::kAvx512,
                                CpuIsa::kAvx512Vnni};

CpuIsa Parse(const std::string& name) {
  for (CpuIsa isa : kAllIsas)
    if (name == CpuIsaName(isa)) return isa;
  Fail(Code::kInvalidArgument, "DFLOW_CPU_ISA='", name,
       "' is not one of generic, avx2, avx_vnni, avx512, avx512_vnni");
}

void RequireSupported(CpuIsa isa, const std::string& who) {
  if (Supported(isa)) return;
  std::string have;
  for (CpuIsa s : SupportedCpuIsas()) have += std::string(have.empty() ? "" : ", ") + CpuIsaName(s);
  Fail(Code::kInvalidArgument, who, ": this CPU cannot run ", CpuIsaName(isa), " (it has ", have, ")");
}

CpuIsa FromEnvironment() {
  const char* name = std::getenv("DFLOW_CPU_ISA");
  if (!name || !*name) return SupportedCpuIsas().back();
  CpuIsa isa = Parse(name);
  RequireSupported(isa, "DFLOW_CPU_ISA");
  return isa;
}

// -1: not chosen yet.
std::atomic<int> active{-1};

}  // namespace

const char* CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kGeneric: return "generic";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvxVnni: return "avx_vnni";
    case CpuIsa::kAvx512: return "avx512";
    case CpuIsa::kAvx512Vnni: return "avx512_vnni";
  }
  return "?";
}

std::vector<CpuIsa> SupportedCpuIsas() {
  std::vector<CpuIsa> isas;
  for (CpuIsa isa : kAllIsas)
    if (Supported(isa)) isas.push_back(isa);
  return isas;
}

CpuIsa ActiveCpuIsa() {
  int isa = active.load(std::memory_order_acquire);
  if (isa < 0) {
    isa = static_cast<int>(FromEnvironment());
    int unset = -1;
    if (!active.compare_exchange_strong(unset, isa, std::memory_order_acq_rel)) isa = unset;
  }
  return static_cast<CpuIsa>(isa);
}

void SetActiveCpuIsa(CpuIsa isa) {
  RequireSupported(isa, "SetActiveCpuIsa");
  active.store(static_cast<int>(isa), std::memory_order_release);
}

}  // namespace dflow::cpu

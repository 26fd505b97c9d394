// FixedRhsGemm (ops/cpu/gemm_packed.h): c = a * b for a long a and a fixed b.
//
// Why not Eigen: Eigen packs both operands for every call, and a conv calls
// the product once per chunk of rows (im2col) or per thread, so the filter is
// repacked again and again; on these shapes (m in the tens of thousands, k
// and n 24-1024) it runs at ~45-50 GFLOP/s on one core. Here b is packed once
// into panels of 32 columns ([k][32], zero-padded), and a is read in place:
// a row of a tile of c is one broadcast a[i, p] times a panel row.
//
// Blocking (see MultiplyPacked): slices of k, blocks of columns and chunks
// of rows sized for L1 / L2; within those, a tile of c two vectors wide (12
// rows x 32 columns with AVX-512: 24 vector accumulators, the most that fit
// in registers beside the panel row; 6 x 16 with AVX2, 6 x 8 with SSE) is
// loaded (or zeroed, on the first slice of k), updated once per p of the
// slice, and stored. The kernel is compiled for each instruction set
// (gemm_packed_kernel.inc via isa_variants.inc) and chosen at run time; the
// panels are packed for the set that multiplies them.
#include "ops/cpu/gemm_packed.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ops/cpu/matmul.h"

namespace dflow::cpu {
namespace {

#define DFLOW_ISA_KERNEL "ops/cpu/gemm_packed_kernel.inc"
#include "ops/cpu/isa_variants.inc"
#undef DFLOW_ISA_KERNEL

// The kernel of one instruction set.
struct PackedKernel {
  int64_t (*panel_floats)(int64_t k, int64_t n);
  void (*pack)(const float* b, int64_t k, int64_t n, bool transpose, float* panels);
  void (*multiply)(const float* panels, int64_t k, int64_t n, const float* a, int64_t m, float* c);
  int64_t tile_rows;
};

const PackedKernel& KernelFor(CpuIsa isa) {
  static const PackedKernel kernels[] = {
      {generic::PanelFloats, generic::PackPanels, generic::MultiplyPacked, generic::kTileRows},
      {avx2::PanelFloats, avx2::PackPanels, avx2::MultiplyPacked, avx2::kTileRows},
      {avx512::PanelFloats, avx512::PackPanels, avx512::MultiplyPacked, avx512::kTileRows}};
  switch (FloatIsa(isa)) {
    case CpuIsa::kAvx2: return kernels[1];
    case CpuIsa::kAvx512: return kernels[2];
    default: return kernels[0];
  }
}

}  // namespace

template <typename T>
FixedRhsGemm<T>::FixedRhsGemm(const T* b, int64_t k, int64_t n, bool transpose)
    : b_(b), k_(k), n_(n), transpose_(transpose), isa_(ActiveCpuIsa()) {
  if constexpr (std::is_same_v<T, float>) {
    const PackedKernel& kernel = KernelFor(isa_);
    panels_.assign(kernel.panel_floats(k, n), 0.0f);
    kernel.pack(b, k, n, transpose, panels_.data());
  }
}

template <typename T>
void FixedRhsGemm<T>::Multiply(const T* a, int64_t m, T* c) const {
  if constexpr (!std::is_same_v<T, float>) {
    Gemm<T>(nullptr, a, b_, c, m, k_, n_, false, transpose_);
  } else {
    if (m == 0 || n_ == 0) return;
    if (k_ == 0) return std::fill(c, c + m * n_, 0.0f);
    KernelFor(isa_).multiply(panels_.data(), k_, n_, a, m, c);
  }
}

template <typename T>
void FixedRhsGemm<T>::Multiply(ThreadPool* pool, const T* a, int64_t m, T* c) const {
  const int64_t work = m * k_ * n_;
  int64_t blocks = pool ? pool->num_threads() : 1;
  blocks = std::max<int64_t>(1, std::min({blocks, m / KernelFor(isa_).tile_rows, work / kMinGemmWorkPerThread}));
  if (blocks == 1) return Multiply(a, m, c);
  pool->ParallelFor(blocks, work / blocks, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      const int64_t begin = m * block / blocks, end = m * (block + 1) / blocks;
      Multiply(a + begin * k_, end - begin, c + begin * n_);
    }
  });
}

template class FixedRhsGemm<float>;
template class FixedRhsGemm<double>;

}  // namespace dflow::cpu

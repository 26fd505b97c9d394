// FixedRhsGemm (ops/cpu/gemm_packed.h) against a naive triple loop in
// double: odd sizes on both sides of every blocking edge (tiles of 12 rows,
// panels of 16 / 32 columns, slices of 256 of k, column blocks, row chunks),
// b stored plain and transposed, one to three threads, float and double;
// the float kernel on every instruction set the CPU has.
#include <catch2/catch.hpp>

#include <algorithm>

#include "ops/cpu/cpu_isa.h"
#include "ops/cpu/gemm_packed.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

// c[m, n] = a[m, k] * b, b [k, n] or (transpose) [n, k], in double.
Tensor NaiveProduct(const Tensor& a, const Tensor& b, bool transpose) {
  Tensor a64 = a.CastTo(DType::kFloat64), b64 = b.CastTo(DType::kFloat64);
  const int64_t m = a.dim(0), k = a.dim(1), n = transpose ? b.dim(0) : b.dim(1);
  Tensor c(DType::kFloat64, {m, n});
  const double *pa = a64.data<double>(), *pb = b64.data<double>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += pa[i * k + p] * pb[transpose ? j * k + p : p * n + j];
      c.data<double>()[i * n + j] = sum;
    }
  return c.CastTo(a.dtype());
}

void CheckProduct(DType dtype, int64_t m, int64_t k, int64_t n, bool transpose, ThreadPool* pool,
                  uint64_t seed) {
  INFO("m=" << m << " k=" << k << " n=" << n << " transpose=" << transpose
            << " threads=" << (pool ? pool->num_threads() : 0) << " " << DTypeName(dtype));
  Tensor a = RandomTensor(dtype, {m, k}, seed);
  Tensor b = RandomTensor(dtype, transpose ? Shape{n, k} : Shape{k, n}, seed + 1);
  Tensor c(dtype, {m, n});
  const double tol = 2e-7 * static_cast<double>(k + 1);  // float sums of k products in [-1, 1]
  if (dtype == DType::kFloat32) {
    cpu::FixedRhsGemm<float>(b.data<float>(), k, n, transpose)
        .Multiply(pool, a.data<float>(), m, c.data<float>());
  } else {
    cpu::FixedRhsGemm<double>(b.data<double>(), k, n, transpose)
        .Multiply(pool, a.data<double>(), m, c.data<double>());
  }
  ExpectClose(c, NaiveProduct(a, b, transpose), 1e-4, tol);
}

}  // namespace

TEST_CASE("FixedRhsGemm matches a naive product on odd sizes and thread counts", "[gemm]") {
  // {m, k, n}: n = 1, 16, 17, 33 (a narrow last panel), 48, 70 and 300 (rows
  // packed; 300 > one column block when k = 300); k = 257 and 600 cut into
  // slices; m = 1000 with small n spans several row chunks.
  const int64_t sizes[][3] = {{1, 1, 1},     {5, 3, 16},     {12, 7, 17},   {13, 64, 33},
                              {25, 257, 48}, {37, 100, 70},  {29, 300, 300}, {1000, 5, 24},
                              {11, 600, 65}, {1000, 33, 7}};
  ThreadPool two(2, "test2"), three(3, "test3");
  ForEachCpuIsa([&] {
    uint64_t seed = 21;
    for (auto& s : sizes)
      for (bool transpose : {false, true})
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two, &three})
          CheckProduct(DType::kFloat32, s[0], s[1], s[2], transpose, pool, seed += 2);
  });
}

TEST_CASE("FixedRhsGemm multiplies with the instruction set it packed for", "[gemm]") {
  // Packed under one set, multiplied while another is active: the panels'
  // width is the packing set's, so the product must still be right.
  Tensor b = RandomTensor(DType::kFloat32, {40, 37}, 3);
  Tensor a = RandomTensor(DType::kFloat32, {29, 40}, 4);
  std::vector<cpu::CpuIsa> isas = cpu::SupportedCpuIsas();
  cpu::CpuIsa before = cpu::ActiveCpuIsa();
  cpu::SetActiveCpuIsa(isas.front());
  cpu::FixedRhsGemm<float> rhs(b.data<float>(), 40, 37, false);
  cpu::SetActiveCpuIsa(isas.back());
  Tensor c(DType::kFloat32, {29, 37});
  rhs.Multiply(nullptr, a.data<float>(), 29, c.data<float>());
  cpu::SetActiveCpuIsa(before);
  ExpectClose(c, NaiveProduct(a, b, false), 1e-4, 1e-5);
}

TEST_CASE("The CPU's instruction sets: generic always, a forced one must exist", "[gemm]") {
  std::vector<cpu::CpuIsa> isas = cpu::SupportedCpuIsas();
  REQUIRE(!isas.empty());
  CHECK(isas.front() == cpu::CpuIsa::kGeneric);
  CHECK(std::string(cpu::CpuIsaName(cpu::CpuIsa::kAvx512Vnni)) == "avx512_vnni");
  const cpu::CpuIsa before = cpu::ActiveCpuIsa();
  for (cpu::CpuIsa isa : {cpu::CpuIsa::kGeneric, cpu::CpuIsa::kAvx2, cpu::CpuIsa::kAvxVnni, cpu::CpuIsa::kAvx512,
                          cpu::CpuIsa::kAvx512Vnni}) {
    INFO(cpu::CpuIsaName(isa));
    if (std::find(isas.begin(), isas.end(), isa) != isas.end()) CHECK_NOTHROW(cpu::SetActiveCpuIsa(isa));
    else ExpectError([&] { cpu::SetActiveCpuIsa(isa); }, Code::kInvalidArgument, "this CPU cannot run");
  }
  cpu::SetActiveCpuIsa(before);
  CHECK(cpu::FloatIsa(cpu::CpuIsa::kAvxVnni) == cpu::CpuIsa::kAvx2);
}

TEST_CASE("FixedRhsGemm in double goes through the general product", "[gemm]") {
  ThreadPool two(2, "test2");
  CheckProduct(DType::kFloat64, 301, 29, 45, false, &two, 3);
  CheckProduct(DType::kFloat64, 17, 40, 9, true, nullptr, 5);
}

TEST_CASE("FixedRhsGemm reuses its packed operand and handles empty sums", "[gemm]") {
  Tensor b = RandomTensor(DType::kFloat32, {19, 40}, 7);
  cpu::FixedRhsGemm<float> rhs(b.data<float>(), 19, 40, false);
  for (uint64_t seed : {8, 9}) {
    Tensor a = RandomTensor(DType::kFloat32, {23, 19}, seed);
    Tensor c(DType::kFloat32, {23, 40});
    rhs.Multiply(nullptr, a.data<float>(), 23, c.data<float>());
    ExpectClose(c, NaiveProduct(a, b, false), 1e-4, 1e-5);
  }
  // k = 0: every entry is an empty sum; m = 0: nothing is written.
  Tensor c(DType::kFloat32, {4, 5});
  std::fill_n(c.data<float>(), 20, 3.0f);
  cpu::FixedRhsGemm<float>(nullptr, 0, 5, false).Multiply(nullptr, nullptr, 4, c.data<float>());
  ExpectEqual(c, Tensor::Zeros(DType::kFloat32, {4, 5}));
  cpu::FixedRhsGemm<float>(b.data<float>(), 19, 40, true).Multiply(nullptr, nullptr, 0, nullptr);
}

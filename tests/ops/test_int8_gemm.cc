// Int8Rhs (ops/cpu/int8_gemm.h) against the exact sum in 64-bit integers, on
// every instruction set the CPU has: odd sizes on both sides of the tile
// edges (rows of 6 and 12, panels of 16 and 32 columns, k not a multiple of
// the groups of 2 and 4), extreme codes, zero points, one to three threads.
#include <catch2/catch.hpp>

#include <array>
#include <random>

#include "ops/cpu/int8_gemm.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

struct Operands {
  std::vector<uint8_t> a;
  std::vector<int8_t> b;
};

Operands RandomOperands(int64_t m, int64_t k, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Operands o{std::vector<uint8_t>(m * k), std::vector<int8_t>(k * n)};
  for (uint8_t& x : o.a) x = static_cast<uint8_t>(rng() % 256);
  for (int8_t& x : o.b) x = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
  return o;
}

std::vector<int32_t> Exact(const Operands& o, int64_t m, int64_t k, int64_t n, int32_t a_zero) {
  std::vector<int32_t> c(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += (int64_t{o.a[i * k + p]} - a_zero) * o.b[p * n + j];
      c[i * n + j] = static_cast<int32_t>(sum);
    }
  return c;
}

void CheckProduct(const Operands& o, int64_t m, int64_t k, int64_t n, int32_t a_zero, ThreadPool* pool) {
  INFO("m=" << m << " k=" << k << " n=" << n << " a_zero=" << a_zero
            << " threads=" << (pool ? pool->num_threads() : 0));
  cpu::Int8Rhs rhs(o.b.data(), k, n);
  std::vector<int32_t> c(m * n, -7);
  rhs.Multiply(pool, o.a.data(), m, a_zero, c.data());
  CHECK(c == Exact(o, m, k, n, a_zero));
}

}  // namespace

TEST_CASE("Int8Rhs gives the exact integer product on every instruction set", "[int8]") {
  const int64_t sizes[][3] = {{1, 1, 1},   {5, 3, 16},    {6, 7, 17},    {13, 64, 33},  {12, 257, 48},
                              {25, 9, 65}, {37, 100, 70}, {100, 27, 24}, {7, 1000, 3}, {300, 75, 130}};
  ThreadPool two(2, "test2"), three(3, "test3");
  ForEachCpuIsa([&] {
    uint64_t seed = 40;
    for (auto& s : sizes)
      for (int32_t a_zero : {0, 1, 128, 255}) {
        Operands o = RandomOperands(s[0], s[1], s[2], ++seed);
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two, &three})
          CheckProduct(o, s[0], s[1], s[2], a_zero, pool);
      }
  });
}

TEST_CASE("Int8Rhs: a part of the columns, from rows with a gap past k, into a wider c", "[int8]") {
  ForEachCpuIsa([&] {
    for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{{25, 27, 80}, {13, 64, 96}, {40, 9, 33}}) {
      const Operands o = RandomOperands(m, k, n, 90 + k);
      const std::vector<int32_t> exact = Exact(o, m, k, n, 7);
      cpu::Int8Rhs rhs(o.b.data(), k, n);
      const int64_t lda = (k + 3) / 4 * 4 + 4, ldc = n + 5, panel = rhs.panel_width();
      std::vector<uint8_t> a(m * lda, 0xAB);  // the gap's codes must not count
      for (int64_t i = 0; i < m; ++i) std::copy_n(o.a.begin() + i * k, k, a.begin() + i * lda);
      for (int64_t first = 0; first < n; first += panel)
        for (int64_t cols : {std::min(panel, n - first), n - first}) {
          INFO("m=" << m << " k=" << k << " n=" << n << " columns " << first << " + " << cols);
          std::vector<int32_t> c(m * ldc, -7);
          rhs.MultiplyColumns(a.data(), lda, m, 7, first, cols, c.data(), ldc);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < ldc; ++j)
              CHECK(c[i * ldc + j] == (j < cols ? exact[i * n + first + j] : -7));
        }
      ExpectError([&] { rhs.MultiplyColumns(a.data(), lda, m, 7, 1, 2, nullptr, 2); }, Code::kInvalidArgument,
                  "do not fit");
    }
  });
}

TEST_CASE("Int8Rhs: the extreme codes over a long k do not overflow", "[int8]") {
  // 255 * -128 * 8191 per entry, the zero point 0, then 255: every partial
  // sum near the int32 limits that k < 2^16 allows.
  const int64_t m = 13, k = 8191, n = 35;
  Operands o{std::vector<uint8_t>(m * k, 255), std::vector<int8_t>(k * n, -128)};
  ForEachCpuIsa([&] {
    CheckProduct(o, m, k, n, 0, nullptr);
    CheckProduct(o, m, k, n, 255, nullptr);
  });
}

TEST_CASE("Int8Rhs refuses a k whose sums could overflow", "[int8]") {
  std::vector<int8_t> b(65536);
  ExpectError([&] { cpu::Int8Rhs(b.data(), 65536, 1); }, Code::kInvalidArgument, "k must be in [0, 65536)");
  cpu::Int8Rhs empty(b.data(), 0, 4);  // k = 0: every entry is an empty sum
  std::vector<int32_t> c(8, 9);
  std::vector<uint8_t> a(2);
  empty.Multiply(a.data(), 2, 3, c.data());
  CHECK(c == std::vector<int32_t>(8, 0));
}

// Shared helpers for op tests: run one op through a real Session on the
// given inputs, make random tensors, compare against a naive reference.
#pragma once

#include <concepts>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "graph/session.h"

namespace dflow::testing {

struct OpRun {
  std::string op;
  std::vector<Tensor> inputs{};
  AttrMap attrs{};
  // Inputs given as Const nodes (so shape inference sees their values, as
  // Reshape's shape needs); the others are fed through Placeholders of
  // their full shape.
  std::set<int> const_inputs{};
  std::string device = "/device:CPU:0";
};

// Builds a graph with one node of `run.op` and returns all its outputs. Also
// checks that each output's run-time shape agrees with the inferred shape,
// and, on a CPU, that feeding the same values from bytes 8 bytes past a
// 64-byte boundary (as tensors received over the network sit) gives the same
// bits: a kernel's results must never depend on where its inputs are.
std::vector<Tensor> RunOp(const OpRun& run);
Tensor RunOp1(const OpRun& run);
// The common case: every input fed, output 0 returned.
Tensor Run(const std::string& op, std::vector<Tensor> inputs, AttrMap attrs = {});

// A float32 vector tensor of `values`.
inline Tensor FloatTensor(std::vector<float> values) { return Tensor::FromVector<float>(values); }

// A tensor's bytes as they sit in memory, to compare two tensors bit for bit.
inline std::string TensorBytes(const Tensor& t) {
  return std::string(static_cast<const char*>(t.raw_data()), t.TotalBytes());
}

// Uniform values in [lo, hi) (integers: rounded); deterministic in `seed`.
Tensor RandomTensor(DType dtype, const Shape& shape, uint64_t seed, double lo = -1, double hi = 1);

// Element-wise |actual - expected| <= atol + rtol * |expected|, same dtype
// and shape; NaN matches NaN. Reports the first mismatch with its index.
void ExpectClose(const Tensor& actual, const Tensor& expected, double rtol = 1e-5, double atol = 1e-6);
void ExpectEqual(const Tensor& actual, const Tensor& expected);

// Runs fn and checks it throws dflow::Error with `code` and a message
// containing `substring`. A template so that a braced list of parts, as in
// ExpectError(fn, code, {"a", "b"}), is never taken for one string: it goes
// to tests/models/checkpoint_test_util.h's overload when both are in sight.
void ExpectErrorContaining(const std::function<void()>& fn, Code code, const std::string& substring);
template <typename Substring>
  requires std::convertible_to<const Substring&, std::string>
void ExpectError(const std::function<void()>& fn, Code code, const Substring& substring) {
  ExpectErrorContaining(fn, code, substring);
}

// uint8 `codes` are `values` (already clamped to [0, 255]) rounded half away
// from zero. The int8 kernels requantize in float (ops/cpu/quantize_steps.h),
// so within 1e-3 of a tie either neighbour is taken. Reports the first
// mismatch with its index.
void ExpectRequantized(const Tensor& codes, const std::vector<double>& values);

// Runs `fn` once with each instruction set this CPU supports active
// (ops/cpu/cpu_isa.h: the GEMM kernels compiled for several), then restores
// the one that was active. Catch's INFO names the set on a failure.
void ForEachCpuIsa(const std::function<void()>& fn);

}  // namespace dflow::testing

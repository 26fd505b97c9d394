#include "tests/ops/op_test_util.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "ops/cpu/cpu_isa.h"
#include "ops/state.h"

namespace dflow::testing {

namespace {

// A copy of `value` whose bytes start 8 bytes past a 64-byte boundary.
Tensor Misaligned(const Tensor& value) {
  size_t bytes = value.TotalBytes();
  auto* block = static_cast<char*>(std::aligned_alloc(64, (bytes + 8 + 63) / 64 * 64));
  if (bytes) std::memcpy(block + 8, value.raw_data(), bytes);
  return Tensor::Adopt(value.dtype(), value.shape(), block + 8, [block] { std::free(block); });
}

// Same dtype, shape and bits (any NaN matches any NaN).
void ExpectSameBits(const Tensor& actual, const Tensor& expected, const std::string& what) {
  REQUIRE(actual.dtype() == expected.dtype());
  REQUIRE(actual.shape().ToString() == expected.shape().ToString());
  size_t width = DTypeSize(actual.dtype());
  const auto* a = static_cast<const unsigned char*>(actual.raw_data());
  const auto* e = static_cast<const unsigned char*>(expected.raw_data());
  for (int64_t i = 0; i < actual.NumElements(); ++i) {
    if (std::memcmp(a + i * width, e + i * width, width) == 0) continue;
    bool both_nan = std::isnan(ReadAsDouble(actual, i)) && std::isnan(ReadAsDouble(expected, i));
    if (both_nan) continue;
    FAIL(what << ": element " << i << " is " << ReadAsDouble(actual, i) << " with inputs 8 bytes past "
              "a 64-byte boundary, " << ReadAsDouble(expected, i) << " with aligned inputs");
  }
}

// One run, the feeds as given or moved to misaligned bytes.
std::vector<Tensor> RunOpOnce(const OpRun& run, bool misaligned_feeds) {
  Scope root = Scope::NewRootScope();
  std::vector<Input> inputs;
  FeedList feeds;
  for (size_t i = 0; i < run.inputs.size(); ++i) {
    const Tensor& value = run.inputs[i];
    Scope s = root.WithOpName(StrCat("input_", i));
    if (run.const_inputs.count(static_cast<int>(i))) {
      inputs.push_back(ops::Const(s, value));
    } else {
      Output placeholder = ops::Placeholder(s, value.dtype(), value.shape());
      inputs.push_back(placeholder);
      feeds.push_back({placeholder, misaligned_feeds ? Misaligned(value) : value});
    }
  }
  Node* node = root.WithOpName("op").WithDevice(run.device).AddOp(run.op, inputs, run.attrs);
  std::vector<TensorName> fetches;
  for (int o = 0; o < node->num_outputs(); ++o) fetches.push_back(Output(node, o));
  SessionOptions options;
  if (!run.device.empty()) options.devices = {run.device};  // the whole graph (feeds, op, fetches) there
  Session session(root, options);
  std::vector<Tensor> outputs = session.Run(feeds, fetches);
  for (int o = 0; o < node->num_outputs(); ++o) {
    INFO(node->Describe() << " output " << o << ": inferred " << node->output_shape(o).ToString()
                          << ", computed " << outputs[o].shape().ToString());
    CHECK(node->output_shape(o).IsCompatibleWith(outputs[o].shape()));
    CHECK(outputs[o].dtype() == node->output_dtype(o));
  }
  return outputs;
}

}  // namespace

std::vector<Tensor> RunOp(const OpRun& run) {
  std::vector<Tensor> outputs = RunOpOnce(run, /*misaligned_feeds=*/false);
  // Random and state ops may draw or read differently on a second run.
  const OpDef* def = OpRegistry::Global().Find(run.op);
  if (run.device.find("CPU") == std::string::npos || !def || def->is_stateful) return outputs;
  std::vector<Tensor> again = RunOpOnce(run, /*misaligned_feeds=*/true);
  for (size_t o = 0; o < outputs.size(); ++o)
    ExpectSameBits(again[o], outputs[o], StrCat(run.op, " output ", o));
  return outputs;
}

Tensor RunOp1(const OpRun& run) { return RunOp(run).at(0); }

Tensor Run(const std::string& op, std::vector<Tensor> inputs, AttrMap attrs) {
  return RunOp1({.op = op, .inputs = std::move(inputs), .attrs = std::move(attrs)});
}

Tensor RandomTensor(DType dtype, const Shape& shape, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(lo, hi);
  Tensor values(DType::kFloat64, shape);
  for (double& v : values.flat<double>()) v = uniform(rng);
  if (IsInteger(dtype))
    for (double& v : values.flat<double>()) v = std::round(v);
  if (dtype == DType::kBool)
    for (double& v : values.flat<double>()) v = v > (lo + hi) / 2 ? 1 : 0;
  return values.CastTo(dtype);
}

void ExpectClose(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  REQUIRE(actual.dtype() == expected.dtype());
  REQUIRE(actual.shape().ToString() == expected.shape().ToString());
  for (int64_t i = 0; i < actual.NumElements(); ++i) {
    double a = ReadAsDouble(actual, i), e = ReadAsDouble(expected, i);
    if (std::isnan(a) && std::isnan(e)) continue;
    if (std::isinf(e) && a == e) continue;
    if (!(std::abs(a - e) <= atol + rtol * std::abs(e))) {
      FAIL("element " << i << " of " << actual.SummaryString() << ": got " << a << ", expected " << e);
    }
  }
}

void ExpectEqual(const Tensor& actual, const Tensor& expected) { ExpectClose(actual, expected, 0, 0); }

void ExpectErrorContaining(const std::function<void()>& fn, Code code, const std::string& substring) {
  try {
    fn();
  } catch (const Error& e) {
    INFO("error: " << e.what());
    CHECK(e.code() == code);
    CHECK(std::string(e.what()).find(substring) != std::string::npos);
    return;
  }
  FAIL("expected an error with '" << substring << "', but nothing was thrown");
}

void ExpectRequantized(const Tensor& codes, const std::vector<double>& values) {
  REQUIRE(codes.dtype() == DType::kUInt8);
  REQUIRE(codes.NumElements() == static_cast<int64_t>(values.size()));
  const uint8_t* got = codes.data<uint8_t>();
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i], nearest = std::round(v);
    const bool near_tie = std::fabs(v - std::floor(v) - 0.5) < 1e-3;
    const bool ok = near_tie ? (got[i] == std::floor(v) || got[i] == std::ceil(v)) : got[i] == nearest;
    if (!ok) {
      INFO("code " << i << " is " << int{got[i]} << ", the value " << v << " rounds to " << nearest);
      REQUIRE(ok);
    }
  }
}

void ForEachCpuIsa(const std::function<void()>& fn) {
  const cpu::CpuIsa active = cpu::ActiveCpuIsa();
  struct Restore {
    cpu::CpuIsa isa;
    ~Restore() { cpu::SetActiveCpuIsa(isa); }
  } restore{active};
  for (cpu::CpuIsa isa : cpu::SupportedCpuIsas()) {
    INFO("instruction set " << cpu::CpuIsaName(isa));
    cpu::SetActiveCpuIsa(isa);
    fn();
  }
}

}  // namespace dflow::testing

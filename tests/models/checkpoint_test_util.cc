// Helpers shared by the checkpoint tests (see checkpoint_test_util.h).
#include "tests/models/checkpoint_test_util.h"

#include <unistd.h>

#include "graph/file.h"
#include "ops/state.h"

namespace dflow::testing {

namespace fs = std::filesystem;

ScratchDir::ScratchDir(const std::string& name)
    : path_(fs::temp_directory_path() / StrCat("dflow_", name, "_", ::getpid())) {
  fs::remove_all(path_);
  fs::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string ReadBytes(const std::string& path) { return ReadFileToString(path); }

void WriteBytes(const std::string& path, const std::string& bytes) { WriteFileAtomic(path, bytes); }

uint64_t DataStart(const std::string& path) {
  std::string bytes = ReadBytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(bytes.at(i));
  return 8 + n;
}

void ExpectError(const std::function<void()>& fn, Code code,
                 const std::vector<std::string>& parts) {
  try {
    fn();
    FAIL("expected an error containing '" << (parts.empty() ? "" : parts[0]) << "'");
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.code() == code);
    for (const std::string& part : parts) CHECK_THAT(e.message(), Catch::Contains(part));
  }
}

TestModel::TestModel(ModelSpec spec) {
  auto add = [&](const std::string& name, Shape shape, DType dtype) {
    variables.push_back(ops::Variable(scope.WithOpName(name), shape, dtype));
  };
  add("layer/w", spec.w_shape, spec.w_dtype);
  add("layer/b", {3}, DType::kFloat64);
  add("global_step", {}, DType::kInt64);
  add("half", {2, 2}, DType::kFloat16);
  add("mask", {4}, DType::kBool);
  add("codes", {5}, DType::kUInt8);
  add("small", {3}, DType::kInt8);
  add("index", {2, 2}, DType::kInt32);
  add("empty", {0, 4}, DType::kFloat32);
  if (spec.extra_variable) add("extra", {2}, DType::kFloat32);
  Scope set = scope.NewSubScope("set");
  for (const Output& v : variables) {
    Output input =
        ops::Placeholder(set.WithOpName(v.node()->name() + "/value"), v.dtype(), v.shape());
    setter_inputs_.push_back(input);
    setters_.push_back(ops::Assign(set.WithOpName(v.node()->name() + "/assign"), v, input));
  }
}

std::vector<Tensor> TestModel::Values(int seed) const {
  std::vector<Tensor> values;
  for (size_t k = 0; k < variables.size(); ++k) {
    Tensor t(variables[k].dtype(), variables[k].shape());
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      double x = seed * 10 + static_cast<double>(k) + static_cast<double>(i) * 0.5;
      switch (t.dtype()) {
        case DType::kFloat32: t.data<float>()[i] = static_cast<float>(x); break;
        case DType::kFloat64: t.data<double>()[i] = x + 0.125; break;
        case DType::kFloat16: t.data<Half>()[i] = Half(static_cast<float>(x)); break;
        case DType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(-seed - i); break;
        case DType::kUInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(200 + seed + i); break;
        case DType::kInt32: t.data<int32_t>()[i] = seed * 1000 + static_cast<int32_t>(i); break;
        case DType::kInt64: t.data<int64_t>()[i] = (int64_t{1} << 40) + seed; break;
        case DType::kBool: t.data<bool>()[i] = (i + seed) % 2 == 0; break;
        default: FAIL("unexpected dtype");
      }
    }
    values.push_back(t);
  }
  return values;
}

void TestModel::Set(Session& session, int seed) const {
  std::vector<Tensor> values = Values(seed);
  FeedList feeds;
  std::vector<TensorName> targets;
  for (size_t k = 0; k < variables.size(); ++k) {
    feeds.emplace_back(setter_inputs_[k], values[k]);
    targets.emplace_back(setters_[k]);
  }
  session.Run(feeds, {}, targets);
}

std::vector<Tensor> TestModel::Read(Session& session) const {
  std::vector<TensorName> fetches(variables.begin(), variables.end());
  return session.Run(fetches);
}

void TestModel::ExpectValues(Session& session, int seed) const {
  std::vector<Tensor> expected = Values(seed);
  std::vector<Tensor> actual = Read(session);
  for (size_t k = 0; k < variables.size(); ++k) {
    INFO("variable " << variables[k].name() << ": " << actual[k].DebugString() << " vs "
                     << expected[k].DebugString());
    CHECK(actual[k].Equals(expected[k]));
  }
}

}  // namespace dflow::testing

// Helpers shared by the checkpoint tests: a scratch directory, byte-level
// damage to files, error expectations, and a small model whose variables
// cover every dtype, a scalar and an empty tensor.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "graph/session.h"

namespace dflow::testing {

// A fresh directory under the system temp dir, removed with its contents.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name);
  ~ScratchDir();
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

std::string ReadBytes(const std::string& path);
void WriteBytes(const std::string& path, const std::string& bytes);
// Where the tensor data of a safetensors file starts: 8 + header length.
uint64_t DataStart(const std::string& path);

// Runs `fn`, which must throw an Error of `code` whose message contains
// every one of `parts`.
void ExpectError(const std::function<void()>& fn, Code code, const std::vector<std::string>& parts);

// Variables of every dtype. `spec` varies one of them for mismatch tests.
struct ModelSpec {
  Shape w_shape{2, 3};
  DType w_dtype = DType::kFloat32;
  bool extra_variable = false;  // adds "extra", which no checkpoint has
};

class TestModel {
 public:
  explicit TestModel(ModelSpec spec = {});
  Scope scope = Scope::NewRootScope();
  std::vector<Output> variables;

  // Deterministic values for every variable, different for each seed.
  std::vector<Tensor> Values(int seed) const;
  // Assigns Values(seed) through "set/" Assign ops.
  void Set(Session& session, int seed) const;
  std::vector<Tensor> Read(Session& session) const;
  // The variables hold exactly Values(seed).
  void ExpectValues(Session& session, int seed) const;

 private:
  std::vector<Output> setters_;
  std::vector<Output> setter_inputs_;
};

}  // namespace dflow::testing

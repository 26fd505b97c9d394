// Tensors in the graph file (graph/attr_json.cc): above 64 elements they are
// written as their bytes in hex, read back bit for bit (NaN, -0.0, bools
// included) at a quarter of the text for int8 weights as for float32 ones;
// a malformed "hex" is named, and a huge shape with a short string is
// refused before anything is allocated.
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "graph/graph_io.h"
#include "ops/state.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using testing::TensorBytes;
using testing::ExpectError;

namespace {

// A graph file of one Const whose value is `tensor` (JSON) must fail so.
void ExpectBadConst(const std::string& tensor, Code code, const std::string& substring) {
  INFO(tensor);
  ExpectError(
      [&] {
        ParseGraph(R"({"format": "dflow.graph/1", "nodes": [{"name": "c", "op": "Const", "attrs": )"
                   R"({"dtype": "float32", "value": )" + tensor + "}}]}",
                   "g.json");
      },
      code, substring);
}

}  // namespace

TEST_CASE("graph file writes large tensors as hexadecimal bytes, exactly", "[io]") {
  Scope s = Scope::NewRootScope();
  std::vector<float> weights(65);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = std::ldexp(static_cast<float>(i) - 32.5f, -7);
  weights[3] = std::nanf("");
  weights[4] = -0.0f;
  std::vector<int8_t> codes(300);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<int8_t>(i * 37);
  std::vector<bool> flags(100);
  for (size_t i = 0; i < flags.size(); ++i) flags[i] = i % 3 == 0;
  ops::Const(s.WithOpName("f32"), Tensor::FromVector(weights, {5, 13}));
  ops::Const(s.WithOpName("i8"), Tensor::FromVector(codes, {3, 100}));
  ops::Const(s.WithOpName("flags"), Tensor::FromVector(flags));
  ops::Const(s.WithOpName("small"), Tensor::FromVector<float>(std::vector<float>(64, 0.5f)));
  auto json = ToJson(s.graph());
  const std::string text = json.dump();
  // Up to 64 elements stay a readable list; above, the bytes in hex.
  CHECK(text.find(R"("shape":[64],"values":[0.5,)") != std::string::npos);
  CHECK(text.find(R"("dtype":"int8","shape":[3,100],"hex":"00254a6f)") != std::string::npos);
  CHECK(text.find(R"("shape":[100],"hex":"010000010000)") != std::string::npos);
  auto loaded = GraphFromJson(json);
  for (const char* name : {"f32", "i8", "flags", "small"}) {
    INFO(name);
    CHECK(TensorBytes(loaded->GetNode(name).attr<Tensor>("value")) ==
          TensorBytes(s.graph().GetNode(name).attr<Tensor>("value")));
  }
  CHECK(ToJson(*loaded).dump() == text);
  // A quarter of the text for int8 weights as for float32 ones.
  ops::Const(s.WithOpName("w32"), Tensor::FromVector(std::vector<float>(1000, 0.123456f)));
  ops::Const(s.WithOpName("w8"), Tensor::FromVector(std::vector<int8_t>(1000, -77)));
  json = ToJson(s.graph());
  for (auto& node : json["nodes"]) {
    if (node["name"] == "w32") CHECK(node["attrs"]["value"]["hex"].get<std::string>().size() == 8000);
    if (node["name"] == "w8") CHECK(node["attrs"]["value"]["hex"].get<std::string>().size() == 2000);
  }
}

TEST_CASE("graph file names a malformed hex tensor", "[io][hostile]") {
  ExpectBadConst(R"({"dtype": "float32", "shape": [2], "hex": "0000803f000000"})",
                 Code::kInvalidArgument, "\"hex\" has 14 digits; shape [2] of float32 needs 16 (two per byte)");
  ExpectBadConst(R"({"dtype": "int8", "shape": [2], "hex": "0g01"})", Code::kInvalidArgument,
                 "\"hex\" has 'g' at digit 1, which is not a hexadecimal digit");
  ExpectBadConst(R"({"dtype": "bool", "shape": [2], "hex": "0102"})", Code::kInvalidArgument,
                 "\"hex\": element 1 of a bool tensor is 2, not 0 or 1");
  ExpectBadConst(R"({"dtype": "int8", "shape": [1], "hex": "01", "values": [1]})",
                 Code::kInvalidArgument, "either \"values\" or \"hex\", not both");
  ExpectBadConst(R"({"dtype": "int8", "shape": [1]})", Code::kInvalidArgument,
                 "either \"values\" or \"hex\", and this one has neither");
  ExpectBadConst(R"({"dtype": "int8", "shape": [2], "hex": 12})", Code::kInvalidArgument,
                 "expected \"hex\" as a string of hexadecimal digits");
  // A huge shape with a short string is refused before anything is allocated.
  ExpectBadConst(R"({"dtype": "float32", "shape": [1000000000, 100], "hex": "00"})",
                 Code::kInvalidArgument, "needs 800000000000 (two per byte)");
}

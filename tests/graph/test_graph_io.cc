// The JSON graph file: exact round trips (every attr type, every dtype,
// control inputs, devices, seed), forward references, each malformed-file
// error, and DOT export.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "graph/file.h"
#include "graph/graph_io.h"
#include "graph/json.h"
#include "ops/state.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using testing::TensorBytes;
using testing::ExpectError;

namespace {

// Test-only ops: one with an attr of every type, one with a list input and
// two outputs. They need no kernels: these tests only build graphs.
REGISTER_OP("IoTestAttrs")
    .output("out", "T")
    .type_attr("T", {})
    .attr<int64_t>("i", 0)
    .attr<double>("f", 0.0)
    .attr<bool>("b", false)
    .attr<std::string>("s", "")
    .attr<Shape>("shape", Shape{})
    .attr<Tensor>("t", Tensor::Scalar(0.0f))
    .attr<std::vector<int64_t>>("li", {})
    .attr<std::vector<double>>("lf", {})
    .attr<std::vector<bool>>("lb", {})
    .attr<std::vector<std::string>>("ls", {})
    .attr<std::vector<DType>>("ld", {})
    .attr<std::vector<Shape>>("lshape", {})
    .attr<std::vector<Tensor>>("lt", {})
    .attr<DType>("d", DType::kInt8)
    .doc("Test op with an attr of every type.");

REGISTER_OP("IoTestSplit")
    .input_list("values", "T", "N")
    .output("first", "T")
    .output("second", "T")
    .type_attr("T", {})
    .shape_fn([](InferenceContext& ctx) {
      ctx.set_output(0, ctx.input_shape(0));
      ctx.set_output(1, ctx.input_shape(0));
    })
    .doc("Test op with a list input and two outputs.");

Tensor Half3() {
  Tensor t(DType::kFloat16, {3});
  t.data<Half>()[0] = Half(0.1f);
  t.data<Half>()[1] = Half(-65504.0f);
  t.data<Half>()[2] = Half::FromBits(0x0001);  // smallest subnormal
  return t;
}

// A graph using every attr type and dtype, control inputs, devices, a seed.
std::shared_ptr<Graph> RichGraph() {
  Scope s = Scope::NewRootScope();
  s.graph().set_seed(-42);
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1, 3});
  ops::Placeholder(s.WithOpName("any"), DType::kInt64);
  auto v = ops::Variable(s.WithOpName("layer/v").WithDevice("/device:CPU:0"), {2}, DType::kFloat64);
  auto init =
      ops::Assign(s.WithOpName("layer/init"), v, Tensor::FromVector<double>({1e-300, -0.0}));
  auto step = ops::AssignAdd(s.WithOpName("layer/step").WithControlDependencies({init}), v,
                             Tensor::FromVector<double>({0.5, 1.0 / 3}));
  ops::NoOp(s.WithOpName("group").WithControlDependencies({init, step}));
  ops::Const(s.WithOpName("f32"),
             Tensor::FromVector<float>({0.1f, 1e-45f, 3.4028235e38f, -2.5f}, {2, 2}));
  ops::Const(s.WithOpName("f16"), Half3());
  ops::Const(s.WithOpName("i8"), Tensor::FromVector<int8_t>({-128, 127}));
  ops::Const(s.WithOpName("u8"), Tensor::FromVector<uint8_t>({0, 255}));
  ops::Const(s.WithOpName("i32"), Tensor::FromVector<int32_t>({INT32_MIN, INT32_MAX}));
  ops::Const(s.WithOpName("i64"), Tensor::FromVector<int64_t>({INT64_MIN, INT64_MAX}));
  ops::Const(s.WithOpName("flags"), Tensor::FromVector<bool>({true, false, true}));
  ops::Const(s.WithOpName("empty"), Tensor(DType::kFloat32, {0, 3}));
  AttrMap attrs = {
      {"T", DType::kBool},
      {"i", int64_t{-7}},
      {"f", 0.1},
      {"b", true},
      {"s", std::string("a \"q\"\n")},
      {"shape", Shape::Unknown()},
      {"t", Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3})},
      {"li", std::vector<int64_t>{1, -1}},
      {"lf", std::vector<double>{0.25, 1e100}},
      {"lb", std::vector<bool>{true, false}},
      {"ls", std::vector<std::string>{"a", ""}},
      {"ld", std::vector<DType>{DType::kFloat16, DType::kUInt8}},
      {"lshape", std::vector<Shape>{Shape{-1, 2}, Shape{}, Shape::Unknown()}},
      {"lt", std::vector<Tensor>{Tensor::Scalar(true), Tensor::FromVector<double>({2.5})}},
      {"d", DType::kInt64}};
  s.WithOpName("attrs").AddOp("IoTestAttrs", {}, attrs);
  auto split = s.WithOpName("split").AddOp("IoTestSplit", {x, x, x});
  s.WithOpName("use_second").AddOp("IoTestSplit", {Output(split, 1), Output(split, 0)});
  return s.graph_ptr();
}

void ExpectSameGraph(const Graph& a, const Graph& b) {
  CHECK(a.seed() == b.seed());
  auto na = a.nodes(), nb = b.nodes();
  REQUIRE(na.size() == nb.size());
  for (size_t i = 0; i < na.size(); ++i) {
    INFO("node " << na[i]->name());
    CHECK(na[i]->name() == nb[i]->name());
    CHECK(na[i]->op() == nb[i]->op());
    CHECK(na[i]->requested_device() == nb[i]->requested_device());
    REQUIRE(na[i]->num_inputs() == nb[i]->num_inputs());
    for (int k = 0; k < na[i]->num_inputs(); ++k)
      CHECK(na[i]->input(k).name() == nb[i]->input(k).name());
    REQUIRE(na[i]->control_inputs().size() == nb[i]->control_inputs().size());
    for (size_t k = 0; k < na[i]->control_inputs().size(); ++k)
      CHECK(na[i]->control_inputs()[k]->name() == nb[i]->control_inputs()[k]->name());
    REQUIRE(na[i]->attrs().size() == nb[i]->attrs().size());
    for (const auto& [name, value] : na[i]->attrs()) {
      INFO("attr " << name << " = " << AttrToString(value));
      CHECK(AttrEquals(value, nb[i]->attrs().find(name)->second));
    }
    for (int k = 0; k < na[i]->num_outputs(); ++k)
      CHECK(na[i]->output_shape(k) == nb[i]->output_shape(k));
  }
}

}  // namespace

TEST_CASE("graph file round trip is exact", "[io]") {
  auto graph = RichGraph();
  auto loaded = GraphFromJson(ToJson(*graph));
  ExpectSameGraph(*graph, *loaded);
  CHECK(ToJson(*loaded).dump() == ToJson(*graph).dump());
  // Bit-exact tensors, including float16 subnormals, -0.0 and extreme floats.
  for (const char* name : {"f32", "f16", "i64"}) {
    CHECK(TensorBytes(loaded->GetNode(name).attr<Tensor>("value")) ==
          TensorBytes(graph->GetNode(name).attr<Tensor>("value")));
  }
  CHECK(std::signbit(
      loaded->GetNode("layer/init").input(1).node->attr<Tensor>("value").data<double>()[1]));

  auto dir =
      std::filesystem::temp_directory_path() / ("dflow_graph_io_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "g.json").string();
  SaveGraph(*graph, path);
  ExpectSameGraph(*graph, *LoadGraph(path));
  // Saving the loaded graph gives the same file.
  std::string first = ReadFileToString(path);
  SaveGraph(*LoadGraph(path), path);
  CHECK(ReadFileToString(path) == first);
  std::filesystem::remove_all(dir);
}

TEST_CASE("graph file metadata travels with the graph, and only strings are taken", "[io]") {
  auto graph = RichGraph();
  graph->set_metadata("detector", R"({"classes": ["cat", "dog"]})");
  graph->set_metadata("author", "me");
  auto loaded = GraphFromJson(ToJson(*graph));
  CHECK(loaded->metadata() == graph->metadata());
  const std::string text = ToJson(*graph).dump();
  CHECK(text.find(R"("metadata":{"author":"me","detector")") != std::string::npos);
  // A graph without metadata writes no field: older files stay byte for byte.
  CHECK(ToJson(*RichGraph()).dump().find("metadata") == std::string::npos);

  auto bad = [](const std::string& metadata, const std::string& message) {
    ExpectError([&] { ParseGraph(R"({"format": "dflow.graph/1", "nodes": [], "metadata": )" + metadata + "}"); },
                Code::kInvalidArgument, message);
  };
  bad("[1]", "\"metadata\" must be an object of strings, got");
  bad(R"({"size": 300})", "metadata \"size\" must be a string, got number 300");
}

TEST_CASE("graph file writes readable values", "[io]") {
  auto json = ToJson(*RichGraph());
  std::string text = json.dump();
  INFO(text);
  CHECK(json["format"] == "dflow.graph/1");
  CHECK(json["seed"] == -42);
  CHECK(
      text.find(R"({"name":"x","op":"Placeholder","attrs":{"dtype":"float32","shape":[-1,3]}})") !=
      std::string::npos);
  CHECK(text.find(R"("inputs":["layer/v","layer/step/input_1","^layer/init"])") != std::string::npos);
  CHECK(text.find(R"("values":[0.1,1e-45,3.4028235e+38,-2.5])") !=
        std::string::npos);                                                   // shortest float32
  CHECK(text.find(R"("values":[0.1,-65500.0,6e-08])") != std::string::npos);  // shortest float16
  CHECK(text.find(R"("shape":null)") != std::string::npos);
  CHECK(text.find(R"("inputs":["split:1","split"])") != std::string::npos);
  CHECK(text.find(R"("device":"/device:CPU:0")") != std::string::npos);
}

TEST_CASE("graph file non-finite floats", "[io]") {
  Scope s = Scope::NewRootScope();
  float inf = std::numeric_limits<float>::infinity();
  ops::Const(s.WithOpName("c"), Tensor::FromVector<float>({std::nanf(""), inf, -inf}));
  auto json = ToJson(s.graph());
  CHECK(json.dump().find(R"("values":["nan","inf","-inf"])") != std::string::npos);
  Tensor back = GraphFromJson(json)->GetNode("c").attr<Tensor>("value");
  CHECK(std::isnan(back.data<float>()[0]));
  CHECK(back.data<float>()[1] == inf);
  CHECK(back.data<float>()[2] == -inf);
}

TEST_CASE("graph file refuses to save a string attr that is not UTF-8", "[io]") {
  Scope s = Scope::NewRootScope();
  s.WithOpName("bad").AddOp("IoTestAttrs", {},
                            {{"T", DType::kFloat32}, {"s", std::string("\xff")}});
  ExpectError([&] { SaveGraph(s.graph(), "/tmp/never-written.json"); }, Code::kInvalidArgument,
              "cannot save node 'bad' to '/tmp/never-written.json': invalid UTF-8 byte");
  CHECK(!std::filesystem::exists("/tmp/never-written.json"));
}

TEST_CASE("graph file nodes may come in any order", "[io]") {
  auto graph = ParseGraph(R"({"format": "dflow.graph/1", "nodes": [
      {"name": "inc", "op": "AssignAdd", "inputs": ["v", "one", "^init"]},
      {"name": "init", "op": "Assign", "inputs": ["v", "zero"]},
      {"name": "one", "op": "Const", "attrs": {"dtype": "float32",
                                                "value": {"dtype": "float32", "shape": [2], "values": [1, 1]}}},
      {"name": "zero", "op": "Const", "attrs": {"dtype": "float32",
                                                 "value": {"dtype": "float32", "shape": [2], "values": [0, 0]}}},
      {"name": "v", "op": "VariableV2", "attrs": {"shape": [2], "dtype": "float32"}}]})");
  std::vector<std::string> order;
  for (Node* node : graph->nodes()) order.push_back(node->name());
  // Earliest-in-file first, among the nodes whose inputs are ready.
  CHECK(order == std::vector<std::string>{"one", "zero", "v", "init", "inc"});
  CHECK(graph->seed() == 0);
  CHECK(graph->GetNode("inc").attr<DType>("T") == DType::kFloat32);  // inferred from the inputs
  Session session(graph);
  testing::ExpectEqual(session.Run({"inc"})[0], Tensor::FromVector<float>({1, 1}));
}

namespace {

// Runs ParseGraph on a document whose "nodes" list is `nodes`.
void ExpectBadNodes(const std::string& nodes, Code code, const std::string& substring) {
  INFO(nodes);
  ExpectError(
      [&] { ParseGraph(R"({"format": "dflow.graph/1", "nodes": [)" + nodes + "]}", "g.json"); },
      code, substring);
}

const std::string kX =
    R"({"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [2]}})";
const std::string kV =
    R"({"name": "v", "op": "VariableV2", "attrs": {"dtype": "float32", "shape": [2]}})";

}  // namespace

TEST_CASE("graph file top-level errors", "[io]") {
  auto bad = [](const std::string& text, Code code, const std::string& substring) {
    INFO(text);
    ExpectError([&] { ParseGraph(text, "g.json"); }, code, substring);
    ExpectError([&] { ParseGraph(text, "g.json"); }, code, "'g.json'");
  };
  bad("{\"format\": \"dflow.graph/1\",\n \"nodes\": [}", Code::kInvalidArgument,
      "not valid JSON: parse error at line 2, column 12");
  bad("", Code::kInvalidArgument, "not valid JSON");
  bad("[1, 2]", Code::kInvalidArgument, "expected a JSON object");
  bad(R"({"nodes": []})", Code::kInvalidArgument, "missing \"format\"");
  bad(R"({"format": "tf.GraphDef", "nodes": []})", Code::kInvalidArgument,
      "unsupported format string \"tf.GraphDef\"");
  bad(R"({"format": 1, "nodes": []})", Code::kInvalidArgument, "unsupported format number 1");
  bad(R"({"format": "dflow.graph/1"})", Code::kInvalidArgument, "\"nodes\" must be a list");
  bad(R"({"format": "dflow.graph/1", "nodes": {}})", Code::kInvalidArgument,
      "\"nodes\" must be a list");
  bad(R"({"format": "dflow.graph/1", "nodes": [], "seed": "7"})", Code::kInvalidArgument,
      "\"seed\" must be an integer");
  bad(R"({"format": "dflow.graph/1", "nodes": [], "node": []})", Code::kInvalidArgument,
      "unknown top-level field \"node\"");
  CHECK(ParseGraph(R"({"format": "dflow.graph/1", "nodes": [], "seed": 7})")->seed() == 7);
  ExpectError([] { LoadGraph("/nonexistent/graph.json"); }, Code::kNotFound,
              "/nonexistent/graph.json");
}

// JSON nested 100,000 levels deep used to overflow the stack when an error
// message printed the value; every field is refused at parse time instead.
TEST_CASE("graph file JSON nested too deep is refused, in any field", "[io][hostile]") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto graph = [](const std::string& node_field, const std::string& top_field) {
    return R"({"format": "dflow.graph/1", )" + top_field + R"("nodes": [{"name": "c", "op": "Const", )" +
           node_field + "}]}";
  };
  const std::vector<std::string> texts = {
      graph("", R"("seed": )" + deep + ", "),
      graph(R"("attrs": {"dtype": )" + deep + "}", ""),
      graph(R"("attrs": {"dtype": "float32", "value": {"dtype": "float32", "shape": [1], "values": )" +
                deep + "}}",
            ""),
      R"({"format": "dflow.graph/1", "nodes": [{"name": )" + deep + R"(, "op": "NoOp"}]})",
  };
  for (const std::string& text : texts) {
    ExpectError([&] { ParseGraph(text, "deep.json"); }, Code::kInvalidArgument,
                "'deep.json': JSON nested more than 256 levels deep");
  }
  // Brackets inside strings do not count; 256 levels are fine.
  CHECK(ParseGraph(R"({"format": "dflow.graph/1", "nodes": [{"name": "c", "op": "NoOp", "device": "[[[["}]})")
            ->num_nodes() == 1);
  CHECK_NOTHROW(ParseJson(std::string(256, '[') + std::string(256, ']'), "ok"));
  // Parser messages quote what they stopped at: cut to a bounded length.
  try {
    ParseGraph(std::string(1, '"').append(100000, 'x'), "long.json");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).size() < 1000);
  }
}

// Found by tests/fuzz/fuzz_graph.cc and fuzz_coco.cc: nlohmann throws
// out_of_range, not parse_error, for a number beyond a double, and it escaped
// every JSON reader as a foreign exception.
TEST_CASE("a number too large for a double is invalid JSON", "[io][hostile]") {
  ExpectError([] { ParseJson("7e776", "big.json"); }, Code::kInvalidArgument,
              "'big.json': not valid JSON: number overflow parsing '7e776'");
  ExpectError([] { ParseGraph(R"({"format": "dflow.graph/1", "seed": -1e999, "nodes": []})", "g.json"); },
              Code::kInvalidArgument, "'g.json': not valid JSON: number overflow");
}

TEST_CASE("only regular files below the allocation limit are read", "[io][hostile]") {
  ExpectError([] { LoadGraph("/dev/zero"); }, Code::kInvalidArgument,
              "cannot read '/dev/zero': not a regular file");
  ExpectError([] { ReadFileToString("/tmp"); }, Code::kInvalidArgument, "is a directory");
  std::string path = StrCat(std::filesystem::temp_directory_path().string(), "/dflow_big_", ::getpid(), ".json");
  WriteFileAtomic(path, std::string(size_t{2} << 20, ' '));
  SetMaxAllocationBytes(int64_t{1} << 20);
  ExpectError([&] { LoadGraph(path); }, Code::kInvalidArgument, "above the allocation limit");
  SetMaxAllocationBytes(0);
  CHECK(ReadFileToString(path).size() == size_t{2} << 20);
  std::filesystem::remove(path);
}

TEST_CASE("graph file node errors name the node and field", "[io]") {
  ExpectBadNodes("3", Code::kInvalidArgument, "nodes[0]: expected an object");
  ExpectBadNodes(R"({"op": "NoOp"})", Code::kInvalidArgument, "nodes[0]: missing \"name\"");
  ExpectBadNodes(R"({"name": 5, "op": "NoOp"})", Code::kInvalidArgument,
                 "\"name\" must be a string");
  ExpectBadNodes(R"({"name": "n"})", Code::kInvalidArgument, "node 'n': missing \"op\"");
  ExpectBadNodes(R"({"name": "n", "op": "NoOp", "input": []})", Code::kInvalidArgument,
                 "node 'n' (NoOp): unknown field \"input\"");
  ExpectBadNodes(R"({"name": "n", "op": "Frobnicate"})", Code::kNotFound,
                 "node 'n' (Frobnicate): unknown op 'Frobnicate'");
  ExpectBadNodes(R"({"name": "n", "op": "NoOp", "inputs": "x"})", Code::kInvalidArgument,
                 "\"inputs\" must be a list");
  ExpectBadNodes(R"({"name": "n", "op": "NoOp", "inputs": [1]})", Code::kInvalidArgument,
                 "input number 1 is not a string");
  ExpectBadNodes(R"({"name": "n", "op": "NoOp", "inputs": ["^y"]})", Code::kInvalidArgument,
                 "node 'n' (NoOp): input '^y' names no node in the file");
  ExpectBadNodes(kX + R"(, {"name": "n", "op": "IoTestSplit", "inputs": ["x:2"]})",
                 Code::kInvalidArgument, "input 'x:2': Placeholder 'x' has only 1 output(s)");
  for (std::string input : {"x:a", "x:", ":0", "^x:0", "x:-1", ""})
    ExpectBadNodes(kX + R"(, {"name": "n", "op": "IoTestSplit", "inputs": [")" + input + "\"]}",
                   Code::kInvalidArgument, "malformed input '" + input + "'");
  ExpectBadNodes(kX + ", " + kX, Code::kAlreadyExists,
                 "duplicate node name 'x' (nodes[0] and nodes[1])");
  ExpectBadNodes(R"({"name": "bad name", "op": "NoOp"})", Code::kInvalidArgument,
                 "invalid node name");
  ExpectBadNodes(R"({"name": "n", "op": "NoOp", "device": 0})", Code::kInvalidArgument,
                 "\"device\" must be a string");
}

TEST_CASE("graph file attr errors name the node, attr and problem", "[io]") {
  auto attrs = [](const std::string& json) {
    return R"({"name": "a", "op": "IoTestAttrs", "attrs": {)" + json + "}}";
  };
  ExpectBadNodes(R"({"name": "a", "op": "IoTestAttrs", "attrs": [1]})", Code::kInvalidArgument,
                 "\"attrs\" must be an object");
  ExpectBadNodes(attrs(R"("T": "float32", "colour": 1)"), Code::kInvalidArgument,
                 "node 'a' (IoTestAttrs): unknown attr 'colour' (IoTestAttrs has attrs: T, i, f");
  ExpectBadNodes(attrs(R"("T": 3)"), Code::kInvalidArgument,
                 "attr 'T' (dtype): expected a dtype name, got number 3");
  ExpectBadNodes(attrs(R"("T": "float31")"), Code::kInvalidArgument,
                 "attr 'T' (dtype): unknown dtype 'float31'");
  ExpectBadNodes(attrs(R"("T": "float32", "i": 2.5)"), Code::kInvalidArgument,
                 "attr 'i' (int): expected an integer, got number 2.5");
  ExpectBadNodes(attrs(R"("T": "float32", "i": 18446744073709551615)"), Code::kInvalidArgument,
                 "out of range");
  ExpectBadNodes(attrs(R"("T": "float32", "f": "x")"), Code::kInvalidArgument,
                 "attr 'f' (float): expected a number");
  ExpectBadNodes(attrs(R"("T": "float32", "b": 1)"), Code::kInvalidArgument,
                 "attr 'b' (bool): expected true or false");
  ExpectBadNodes(attrs(R"("T": "float32", "s": null)"), Code::kInvalidArgument,
                 "attr 's' (string): expected a string");
  ExpectBadNodes(attrs(R"("T": "float32", "shape": "[2]")"), Code::kInvalidArgument,
                 "attr 'shape' (shape): expected a shape");
  ExpectBadNodes(attrs(R"("T": "float32", "shape": [2, -2])"), Code::kInvalidArgument,
                 "expected a dimension");
  ExpectBadNodes(attrs(R"("T": "float32", "li": [1, "2"])"), Code::kInvalidArgument,
                 "attr 'li' (list(int)): [1]: expected an integer, got string \"2\"");
  ExpectBadNodes(attrs(R"("T": "float32", "lshape": 3)"), Code::kInvalidArgument,
                 "attr 'lshape' (list(shape)): expected a list");
  ExpectBadNodes(attrs(R"("T": "float32", "ld": ["float32", "complex64"])"), Code::kInvalidArgument,
                 "[1]: unknown dtype 'complex64'");
  // Tensors.
  auto tensor = [&](const std::string& t) { return attrs(R"("T": "float32", "t": )" + t); };
  ExpectBadNodes(tensor(R"({"dtype": "float32", "shape": [2, 3], "values": [1, 2, 3, 4, 5]})"),
                 Code::kInvalidArgument,
                 "attr 't' (tensor): 5 values do not fill shape [2,3] (6 elements)");
  ExpectBadNodes(tensor(R"({"dtype": "float32", "shape": [2], "value": [1, 2]})"),
                 Code::kInvalidArgument, "unknown tensor field \"value\"");
  ExpectBadNodes(tensor(R"({"dtype": "float32", "values": [1, 2]})"), Code::kInvalidArgument,
                 "tensor has no \"shape\"");
  ExpectBadNodes(tensor(R"({"dtype": "float32", "shape": [-1], "values": []})"),
                 Code::kInvalidArgument, "shape must be fully known");
  ExpectBadNodes(tensor(R"({"dtype": "float32", "shape": [4294967296, 4294967296], "values": []})"),
                 Code::kInvalidArgument, "too many elements");
  ExpectBadNodes(tensor(R"({"dtype": "int8", "shape": [2], "values": [1, 300]})"),
                 Code::kInvalidArgument, "values[1]: 300 is out of range [-128, 127]");
  ExpectBadNodes(tensor(R"({"dtype": "uint8", "shape": [1], "values": [-1]})"),
                 Code::kInvalidArgument, "values[0]: -1 is out of range [0, 255]");
  ExpectBadNodes(tensor(R"({"dtype": "int32", "shape": [1], "values": [1.5]})"),
                 Code::kInvalidArgument, "values[0]: expected an integer");
  ExpectBadNodes(tensor(R"({"dtype": "bool", "shape": [1], "values": [0]})"),
                 Code::kInvalidArgument, "values[0]: expected true or false");
  ExpectBadNodes(tensor(R"({"dtype": "float32", "shape": [2], "values": [1, [2]]})"),
                 Code::kInvalidArgument, "values[1]: expected a number");
  ExpectBadNodes(tensor(R"([1, 2])"), Code::kInvalidArgument, "expected a tensor");
  // Checks AddNode makes: missing required attr, disallowed dtype, mismatched Const.
  ExpectBadNodes(R"({"name": "v", "op": "VariableV2", "attrs": {"dtype": "float32"}})",
                 Code::kInvalidArgument, "VariableV2 'v': missing required attr 'shape'");
  ExpectBadNodes(R"({"name": "c", "op": "Const", "attrs": {"dtype": "int32",
                    "value": {"dtype": "float32", "shape": [], "values": [1]}}})",
                 Code::kInvalidArgument, "Const 'c': value is float32 but dtype is int32");
}

TEST_CASE("graph file cycles and shape errors", "[io]") {
  ExpectBadNodes(R"({"name": "a", "op": "NoOp", "inputs": ["^c"]},
                    {"name": "b", "op": "NoOp", "inputs": ["^a"]},
                    {"name": "c", "op": "NoOp", "inputs": ["^b"]})",
                 Code::kInvalidArgument, "the graph has a cycle: 'a' -> 'b' -> 'c' -> 'a'");
  // A node downstream of the cycle is not named as part of it.
  ExpectBadNodes(R"({"name": "after", "op": "NoOp", "inputs": ["^a"]},
                    {"name": "a", "op": "NoOp", "inputs": ["^b"]},
                    {"name": "b", "op": "NoOp", "inputs": ["^a"]})",
                 Code::kInvalidArgument, "cycle: 'a' -> 'b' -> 'a'");
  ExpectBadNodes(R"({"name": "self", "op": "NoOp", "inputs": ["^self"]})", Code::kInvalidArgument,
                 "cycle: 'self' -> 'self'");
  // Shape inference runs as nodes are added.
  ExpectBadNodes(kV + R"(, {"name": "c", "op": "Const", "attrs": {"dtype": "float32",
                     "value": {"dtype": "float32", "shape": [3], "values": [1, 2, 3]}}},
                    {"name": "init", "op": "Assign", "inputs": ["v", "c"]})",
                 Code::kInvalidArgument,
                 "'g.json': Assign 'init': value shape [3] does not match variable shape [2]");
  ExpectBadNodes(kX + R"(, {"name": "init", "op": "Assign", "inputs": ["x", "x"]})",
                 Code::kInvalidArgument, "input 'ref' must be a variable");
  ExpectBadNodes(kX + R"(, {"name": "n", "op": "NoOp", "inputs": ["x"]})", Code::kInvalidArgument,
                 "NoOp 'n': expects 0 inputs");
}

TEST_CASE("DOT export", "[io]") {
  auto graph = RichGraph();
  std::string dot = ToDot(*graph);
  CHECK(dot.rfind("digraph dflow {\n", 0) == 0);
  CHECK(dot.find(R"("x" [label="x\nPlaceholder"];)") != std::string::npos);
  CHECK(
      dot.find(
          R"("layer/v" [label="layer/v\nVariableV2", fillcolor="#a6cee3", tooltip="/device:CPU:0"];)") !=
      std::string::npos);
  CHECK(dot.find(R"("x" -> "split" [label="float32[?,3]"];)") != std::string::npos);
  CHECK(dot.find(R"("split" -> "use_second" [label=":1 float32[?,3]"];)") != std::string::npos);
  CHECK(dot.find(R"("layer/init" -> "group" [style=dashed];)") != std::string::npos);
  CHECK(dot.substr(dot.size() - 2) == "}\n");
  // Every node and every edge appears once.
  size_t edges = 0;
  for (size_t at = dot.find(" -> "); at != std::string::npos; at = dot.find(" -> ", at + 1))
    ++edges;
  size_t expected = 0;
  for (Node* node : graph->nodes()) expected += node->num_inputs() + node->control_inputs().size();
  CHECK(edges == expected);
}

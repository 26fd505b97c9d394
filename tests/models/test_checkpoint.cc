// Saver through a real Session: round trips, restoring into a fresh graph,
// each way a restore can fail (and that it then changes nothing), partial
// restore with a name map, max_to_keep and the checkpoint index.
#include <catch2/catch.hpp>
#include <filesystem>

#include "models/checkpoint.h"
#include "models/safetensors.h"
#include "ops/state.h"
#include "tests/models/checkpoint_test_util.h"

namespace dflow {
namespace {

namespace fs = std::filesystem;
using testing::ExpectError;
using testing::ModelSpec;
using testing::ScratchDir;
using testing::TestModel;

// Sets `model` to Values(seed) in a session of its own and saves it under `prefix`.
std::string SaveModel(const TestModel& model, int seed, const std::string& prefix) {
  Session session(model.scope);
  model.Set(session, seed);
  return Saver(model.scope).Save(session, prefix);
}

TEST_CASE("Saver: save then restore gives back every value", "[checkpoint]") {
  ScratchDir dir("ckpt_roundtrip");
  TestModel model;
  Session session(model.scope);
  Saver saver(model.scope);
  CHECK(saver.variable_names().size() == model.variables.size());
  model.Set(session, 1);
  std::string path = saver.Save(session, dir / "model", 7);
  CHECK(path == dir / "model-7.safetensors");
  CHECK(SafetensorsReader(path).metadata().at("global_step") == "7");
  model.Set(session, 2);
  saver.Restore(session, path);
  model.ExpectValues(session, 1);
}

TEST_CASE("Saver: restore into a fresh session on a freshly built graph", "[checkpoint]") {
  ScratchDir dir("ckpt_fresh");
  SaveModel(TestModel(), 3, dir.path().string());  // a directory: "<dir>/model.safetensors"
  std::optional<std::string> latest = LatestCheckpoint(dir.path().string());
  REQUIRE(latest == dir / "model.safetensors");
  TestModel model;
  Session session(model.scope);  // its variables are not even initialised
  Saver saver(model.scope);
  saver.Restore(session, *latest);
  model.ExpectValues(session, 3);
}

TEST_CASE("Saver: Values and Assign copy every variable between sessions", "[checkpoint]") {
  TestModel source, target;
  Session from(source.scope), to(target.scope);
  source.Set(from, 4);
  target.Set(to, 5);
  Saver reader(source.scope), writer(target.scope);
  std::vector<Tensor> values = reader.Values(from);
  REQUIRE(values.size() == reader.variable_names().size());
  writer.Assign(to, values);
  target.ExpectValues(to, 4);
  // A value of another shape is refused by name before anything changes.
  std::vector<Tensor> wrong = writer.Values(to);
  wrong.front() = Tensor::Zeros(wrong.front().dtype(), Shape({wrong.front().NumElements() + 1}));
  target.Set(to, 6);
  ExpectError([&] { writer.Assign(to, wrong); }, Code::kInvalidArgument,
              {"variable '" + writer.variable_names().front() + "'"});
  target.ExpectValues(to, 6);
}

// Saves Values(1) with a Saver over TestModel(saved), then checks that
// restoring into TestModel(target), holding Values(2), fails with `code` and
// `parts` after `damage` is done to the file, and changes no variable.
void ExpectFailedRestore(const std::function<void(const std::string&)>& damage, Code code,
                         const std::vector<std::string>& parts, ModelSpec target = {}) {
  ScratchDir dir("ckpt_failed_restore");
  std::string path = SaveModel(TestModel(), 1, dir / "model");
  damage(path);
  TestModel model(target);
  Session session(model.scope);
  Saver saver(model.scope);
  model.Set(session, 2);
  std::vector<std::string> with_path = parts;
  with_path.push_back(path);
  ExpectError([&] { saver.Restore(session, path); }, code, with_path);
  model.ExpectValues(session, 2);
}

void Untouched(const std::string&) {}

TEST_CASE("Saver: a corrupt byte fails the restore and changes nothing", "[checkpoint]") {
  // layer/b is the second tensor: layer/w would already be assigned by a
  // restore that checked as it went.
  ExpectFailedRestore(
      [](const std::string& path) {
        std::string bytes = testing::ReadBytes(path);
        bytes[testing::DataStart(path) + SafetensorsReader(path).Find("layer/b")->begin + 3] ^= 1;
        testing::WriteBytes(path, bytes);
      },
      Code::kDataLoss, {"checksum mismatch in tensor 'layer/b'"});
}

TEST_CASE("Saver: a truncated file fails the restore and changes nothing", "[checkpoint]") {
  auto truncate_to = [](int64_t keep_or_cut) {
    return [keep_or_cut](const std::string& path) {
      std::string bytes = testing::ReadBytes(path);
      size_t size = keep_or_cut >= 0 ? keep_or_cut : bytes.size() + keep_or_cut;
      testing::WriteBytes(path, bytes.substr(0, size));
    };
  };
  ExpectFailedRestore(truncate_to(-1), Code::kDataLoss, {"is truncated"});
  ExpectFailedRestore(truncate_to(100), Code::kDataLoss, {"is truncated"});
  ExpectFailedRestore(truncate_to(3), Code::kDataLoss, {"is truncated"});
}

TEST_CASE("Saver: an overwritten header fails the restore and changes nothing", "[checkpoint]") {
  ExpectFailedRestore(
      [](const std::string& path) {
        std::string bytes = testing::ReadBytes(path);
        bytes.replace(8, 12, "{\"layer/w\":[");  // still valid UTF-8, no longer valid JSON
        testing::WriteBytes(path, bytes);
      },
      Code::kDataLoss, {"malformed safetensors header"});
}

TEST_CASE("Saver: a variable missing from the file is named", "[checkpoint]") {
  ModelSpec spec;
  spec.extra_variable = true;
  ExpectFailedRestore(Untouched, Code::kNotFound, {"variable 'extra' is not in the checkpoint"},
                      spec);
}

TEST_CASE("Saver: shape and dtype mismatches are named", "[checkpoint]") {
  ModelSpec shape;
  shape.w_shape = Shape{3, 2};
  ExpectFailedRestore(
      Untouched, Code::kInvalidArgument,
      {"variable 'layer/w' has shape [3,2] in the graph but [2,3] in the checkpoint"}, shape);
  ModelSpec dtype;
  dtype.w_dtype = DType::kFloat64;
  ExpectFailedRestore(Untouched, Code::kInvalidArgument,
                      {"variable 'layer/w' is float64 in the graph but float32 in the checkpoint"},
                      dtype);
}

TEST_CASE("Saver: partial restore with a name map", "[checkpoint]") {
  ScratchDir dir("ckpt_partial");
  TestModel old_model;
  std::string path = SaveModel(old_model, 4, dir / "pretrained");
  // A new model reuses the old layer/w as encoder/w and has a new head.
  Scope s = Scope::NewRootScope();
  Output encoder = ops::Variable(s.WithOpName("encoder/w"), {2, 3}, DType::kFloat32);
  Output head = ops::Variable(s.WithOpName("head/w"), {2}, DType::kFloat32);
  Node* init = ops::Assign(s, head, Tensor::FromVector<float>({9, 9})).node();
  Session session(s);
  session.Run({}, {}, {init});
  Saver saver(s);

  RestoreOptions options;
  options.name_map = {{"encoder/w", "layer/w"}};
  options.only = {"encoder/w"};
  saver.Restore(session, path, options);  // every other tensor in the file is ignored
  std::vector<Tensor> values = session.Run({encoder, head});
  CHECK(values[0].Equals(old_model.Values(4)[0]));
  CHECK(values[1].ToVector<float>() == std::vector<float>{9, 9});

  // Without `only`, head/w is looked up in the file and missing.
  options.only.clear();
  ExpectError([&] { saver.Restore(session, path, options); }, Code::kNotFound,
              {"variable 'head/w' is not in the checkpoint"});
  options.name_map["head/w"] = "no_such_tensor";
  ExpectError([&] { saver.Restore(session, path, options); }, Code::kNotFound,
              {"variable 'head/w' (as 'no_such_tensor') is not in the checkpoint"});
  options.only = {"typo"};
  ExpectError([&] { saver.Restore(session, path, options); }, Code::kNotFound,
              {"'only' lists 'typo'"});

  // A Saver over a chosen list saves only those variables.
  Saver encoder_saver(s, {encoder});
  std::string encoder_path = encoder_saver.Save(session, dir / "encoder");
  CHECK(SafetensorsReader(encoder_path).entries().size() == 1);
}

TEST_CASE("Saver: max_to_keep deletes the oldest checkpoints of its prefix", "[checkpoint]") {
  ScratchDir dir("ckpt_keep");
  TestModel model;
  Session session(model.scope);
  model.Set(session, 1);
  SaverOptions options;
  options.max_to_keep = 2;
  Saver saver(model.scope, options);
  std::string best = saver.Save(session, dir / "best");  // another prefix, never pruned
  for (int step = 1; step <= 4; ++step) saver.Save(session, dir / "model", step);
  saver.Save(session, dir / "model", 4);  // saved again: not listed twice
  CHECK_FALSE(fs::exists(dir / "model-1.safetensors"));
  CHECK_FALSE(fs::exists(dir / "model-2.safetensors"));
  CHECK(fs::exists(dir / "model-3.safetensors"));
  CHECK(fs::exists(best));
  CheckpointIndex index = ReadCheckpointIndex(dir.path().string());
  CHECK(index.all ==
        std::vector<std::string>{"best.safetensors", "model-3.safetensors", "model-4.safetensors"});
  CHECK(LatestCheckpoint(dir.path().string()) == dir / "model-4.safetensors");
}

TEST_CASE("Saver: the index and its errors", "[checkpoint]") {
  ScratchDir dir("ckpt_index");
  CHECK_FALSE(LatestCheckpoint(dir.path().string()).has_value());
  testing::WriteBytes(dir / "checkpoint.json", R"({"latest": "../../etc/passwd", "all": []})");
  ExpectError([&] { LatestCheckpoint(dir.path().string()); }, Code::kDataLoss,
              {"checkpoint.json", "not a .safetensors file name"});
  testing::WriteBytes(dir / "checkpoint.json", "not json");
  ExpectError([&] { LatestCheckpoint(dir.path().string()); }, Code::kDataLoss,
              {"malformed checkpoint index"});
}

TEST_CASE("Saver: refuses what is not a variable", "[checkpoint]") {
  Scope s = Scope::NewRootScope();
  Output c = ops::Const(s.WithOpName("c"), 1.0f);
  ExpectError([&] { Saver(s, {c}); }, Code::kInvalidArgument, {"'c' is not a variable"});
  ExpectError([&] { Saver{s}; }, Code::kInvalidArgument, {"no variables"});
}

}  // namespace
}  // namespace dflow

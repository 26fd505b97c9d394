// A save killed at a random moment must leave the previous checkpoint
// loadable: a child process saves a large checkpoint in a loop and is
// SIGKILLed several times; then the latest checkpoint must restore, hold one
// consistent step's values, and pass its checksums, stray temp files or not.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "models/checkpoint.h"
#include "models/safetensors.h"
#include "ops/state.h"
#include "tests/models/checkpoint_test_util.h"

namespace dflow {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kBigElements = 4 << 20;    // 16 MB of float32
constexpr int64_t kSmallElements = 2 << 20;  // 8 MB
constexpr int64_t kStepsPerRound = 1'000'000;

// Two large variables that every save increments by one, so a checkpoint of
// step s (within its round) holds s in every element of both.
struct BigModel {
  Scope scope = Scope::NewRootScope();
  Output big = ops::Variable(scope.WithOpName("big"), {kBigElements}, DType::kFloat32);
  Output small = ops::Variable(scope.WithOpName("small"), {kSmallElements}, DType::kFloat32);
};

Tensor Filled(int64_t n, float value) { return Tensor::FromVector(std::vector<float>(n, value)); }

// The child's whole life: zero the variables, then add one and save, forever.
[[noreturn]] void SaveForever(const std::string& dir, int64_t first_step) {
  try {
    BigModel model;
    const Scope& s = model.scope;
    Node* zero = ops::NoOp(
        s.WithControlDependencies({ops::Assign(s, model.big, Filled(kBigElements, 0)),
                                   ops::Assign(s, model.small, Filled(kSmallElements, 0))}));
    Node* add = ops::NoOp(
        s.WithControlDependencies({ops::AssignAdd(s, model.big, Filled(kBigElements, 1)),
                                   ops::AssignAdd(s, model.small, Filled(kSmallElements, 1))}));
    SessionOptions options;
    options.num_threads = 1;
    Session session(s, options);
    Saver saver(s);
    session.Run({}, {}, {zero});
    for (int64_t step = 1;; ++step) {
      session.Run({}, {}, {add});
      saver.Save(session, dir + "/model", first_step + step);
    }
  } catch (...) {
  }
  _exit(3);  // only reached on an error: the parent expects a kill
}

bool WaitFor(const std::function<bool()>& ready, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!ready()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Restores `path` into a fresh graph and checks both variables hold `value`.
void ExpectConsistentCheckpoint(const std::string& path) {
  SafetensorsReader reader(path);
  for (const NamedTensor& t : reader.ReadAll()) CHECK(t.tensor.valid());  // checksums verified
  int64_t step = std::stoll(reader.metadata().at("global_step"));
  float value = static_cast<float>(step % kStepsPerRound);
  BigModel model;
  Session session(model.scope);
  Saver(model.scope).Restore(session, path);
  for (const Tensor& t : session.Run({model.big, model.small})) {
    auto values = t.flat<float>();
    CHECK(std::all_of(values.begin(), values.end(), [&](float x) { return x == value; }));
  }
}

TEST_CASE("Saver: a save killed midway leaves the latest checkpoint loadable", "[checkpoint]") {
  testing::ScratchDir dir("ckpt_crash");
  std::string d = dir.path().string();
  std::random_device seed_source;
  unsigned seed = seed_source();
  INFO("random seed " << seed);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(20, 400);
  for (int round = 0; round < 6; ++round) {
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) SaveForever(d, round * kStepsPerRound);
    // The first round waits for one complete save, so there is something to keep.
    if (round == 0)
      CHECK(WaitFor([&] { return LatestCheckpoint(d).has_value(); }, std::chrono::seconds(60)));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    REQUIRE(kill(child, SIGKILL) == 0);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));  // killed, not failed on its own
  }
  std::optional<std::string> latest = LatestCheckpoint(d);
  REQUIRE(latest.has_value());
  // Strays like a killed save leaves: a half-written temp file of the latest name.
  std::string bytes = testing::ReadBytes(*latest);
  testing::WriteBytes(*latest + ".tmp.999999", bytes.substr(0, bytes.size() / 2));
  testing::WriteBytes(d + "/model-12345.safetensors.tmp.1", "junk");
  CHECK(LatestCheckpoint(d) == latest);
  ExpectConsistentCheckpoint(*latest);
  // Every file the index still lists is whole, and at most max_to_keep remain.
  CheckpointIndex index = ReadCheckpointIndex(d);
  CHECK(index.all.size() <= static_cast<size_t>(SaverOptions{}.max_to_keep));
  for (const std::string& name : index.all) ExpectConsistentCheckpoint(d + "/" + name);
}

}  // namespace
}  // namespace dflow

// spiral_mlp: the first model dflow trains. A two-hidden-layer MLP learns
// to tell three interleaved spirals apart (Adam, cosine-decayed learning
// rate); the program reports held-out accuracy, saves a checkpoint, then
// rebuilds the model in a fresh graph and session, restores the checkpoint
// and checks that the predictions are bit for bit the same.
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <numeric>

#include <CLI/CLI.hpp>

#include "apps/common/program.h"
#include "graph/graph_io.h"
#include "graph/npy.h"
#include "models/checkpoint.h"
#include "models/data/spirals.h"
#include "models/mlp.h"

namespace {

using namespace dflow;

struct Settings {
  int64_t steps = 3000;
  int64_t batch = 64;
  int64_t hidden = 128;
  double learning_rate = 0.01;
  uint64_t seed = 1;
  std::string out = "spiral_run";
  std::string save_graph;  // a directory for graph.json and one batch as .npy
};

// The model, built the same way for training and for the restored copy.
struct Model {
  Scope scope = Scope::NewRootScope();
  models::MlpClassifier net;
};

Model BuildModel(const Settings& settings) {
  Model m;
  m.scope.graph().set_seed(static_cast<int64_t>(settings.seed));
  m.net = models::BuildMlpClassifier(m.scope, {.hidden = {settings.hidden, settings.hidden},
                                               .learning_rate = settings.learning_rate,
                                               .decay_steps = settings.steps});
  return m;
}

// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014): a generator spiral_mlp.py repeats exactly, so
// that the Python example draws the same batches and trains to the same bits.
uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Fisher-Yates over splitmix64.
void Shuffle(std::vector<int64_t>& order, uint64_t& state) {
  for (size_t i = order.size() - 1; i > 0; --i)
    std::swap(order[i], order[SplitMix64(state) % (i + 1)]);
}

// Trains and returns the wall time in seconds. Batches walk a permutation
// of the rows, reshuffled (in place) whenever it runs out, mid-batch too.
double Train(Model& m, Session& session, const models::LabelledPoints& data,
             const Settings& settings) {
  uint64_t state = settings.seed;
  std::vector<int64_t> order(data.labels.NumElements());
  std::iota(order.begin(), order.end(), 0);
  size_t next = order.size();
  auto start = std::chrono::steady_clock::now();
  for (int64_t step = 1; step <= settings.steps; ++step) {
    std::vector<int64_t> rows;
    while (static_cast<int64_t>(rows.size()) < settings.batch) {
      if (next == order.size()) Shuffle(order, state), next = 0;
      rows.push_back(order[next++]);
    }
    models::LabelledPoints batch = models::Gather(data, rows);
    auto out = session.Run({{m.net.x, batch.points}, {m.net.labels, batch.labels}},
                           {m.net.loss, m.net.logits}, {m.net.train});
    if (step % 500 == 0 || step == 1)
      std::cout << "step " << step << "  loss " << out[0].scalar<float>() << "  batch accuracy "
                << models::Accuracy(out[1], batch.labels) << "\n";
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Tensor Predict(const Model& m, Session& session, const models::LabelledPoints& data) {
  return session.Run({{m.net.x, data.points}}, {m.net.logits})[0];
}

// The training graph as a graph file plus one batch, for `dflow profile`
// and `dflow dot`.
void SaveGraphAndBatch(const Model& model, const models::LabelledPoints& data,
                       const Settings& settings) {
  std::filesystem::create_directories(settings.save_graph);
  std::filesystem::path dir(settings.save_graph);
  std::vector<int64_t> rows(settings.batch);
  for (int64_t i = 0; i < settings.batch; ++i) rows[i] = i * 7 % data.labels.NumElements();
  models::LabelledPoints batch = models::Gather(data, rows);
  SaveGraph(model.scope.graph(), (dir / "graph.json").string());
  WriteNpy((dir / "x.npy").string(), batch.points);
  WriteNpy((dir / "labels.npy").string(), batch.labels);
  std::cout << "saved the training graph and a batch in " << dir.string() << "\n";
}

int Run(const Settings& settings) {
  auto train_set = models::MakeSpirals({.points_per_class = 1000, .seed = settings.seed});
  auto test_set = models::MakeSpirals({.points_per_class = 500, .seed = settings.seed + 1000});
  Model model = BuildModel(settings);
  if (!settings.save_graph.empty()) SaveGraphAndBatch(model, train_set, settings);
  Session session(model.scope);
  session.Run({}, {}, {model.net.init});
  double seconds = Train(model, session, train_set, settings);
  Tensor logits = Predict(model, session, test_set);
  double accuracy = models::Accuracy(logits, test_set.labels);
  std::cout << "held-out accuracy " << accuracy << " after " << settings.steps << " steps in "
            << seconds << " s (" << 1e6 * seconds / static_cast<double>(settings.steps)
            << " us/step)\n";

  Saver saver(model.scope);
  std::string path = saver.Save(session, settings.out + "/", settings.steps);
  std::cout << "saved " << path << "\n";

  Model fresh = BuildModel(settings);  // as a new process would
  Session restored(fresh.scope);
  Saver(fresh.scope).Restore(restored, *LatestCheckpoint(settings.out));
  Tensor again = Predict(fresh, restored, test_set);
  bool identical = again.TotalBytes() == logits.TotalBytes() &&
                   std::memcmp(again.raw_data(), logits.raw_data(), logits.TotalBytes()) == 0;
  std::cout << "restored into a fresh session: predictions "
            << (identical ? "identical" : "DIFFER") << "\n";
  std::cout << "{\"test_accuracy\": " << accuracy << ", \"train_seconds\": " << seconds
            << ", \"steps\": " << settings.steps << ", \"restored_identical\": "
            << (identical ? "true" : "false") << "}\n";
  return identical ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  CLI::App app("Train an MLP on three generated spirals, save, restore, compare.");
  apps::SetUpProgram(app, "spiral_mlp");
  app.add_option("--steps", settings.steps, "Training steps")->check(CLI::PositiveNumber);
  app.add_option("--batch", settings.batch, "Batch size")->check(CLI::PositiveNumber);
  app.add_option("--hidden", settings.hidden, "Units per hidden layer")->check(CLI::PositiveNumber);
  app.add_option("--lr", settings.learning_rate, "Initial learning rate (Adam)");
  app.add_option("--seed", settings.seed, "Seed of data, initialisation and batching");
  app.add_option("--out", settings.out, "Directory for checkpoints");
  app.add_option("--save-graph", settings.save_graph,
                 "Directory to write the training graph (graph.json) and one batch (.npy)");
  apps::HideEmptyDefaults(app);
  CLI11_PARSE(app, argc, argv);
  try {
    return Run(settings);
  } catch (const dflow::Error& e) {
    std::cerr << "spiral_mlp: " << e.what() << "\n";
    return 1;
  }
}

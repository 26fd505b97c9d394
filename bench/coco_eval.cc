// COCO box evaluation time on a COCO-val-sized synthetic set: 5,000 images,
// 80 categories, ~7 objects and 100 detections per image (seeded). Prints the
// best of --repeat runs per thread count as JSON lines; --write DIR also
// saves gt.json and dt.json so bench/compare_cocoeval.py can time
// pycocotools on the same data where it is installed.
//   bench_coco_eval --images 5000 --repeat 3 --threads 1,2
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>

#include <CLI/CLI.hpp>

#include "models/data/coco.h"
#include "models/metrics/coco_eval.h"

namespace {

using namespace dflow::models;

struct Synthetic {
  DetectionDataset truth;
  std::vector<Detection> detections;
};

// Objects of log-uniform size (8 to 300 px, so every area range is present),
// 1% crowds, areas below the box (as masks are); detections: jittered copies
// of the objects (sometimes with the wrong class) and random boxes, 100 per image.
Synthetic Generate(int images, int categories, int dets_per_image, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  auto size = [&] { return std::exp(std::log(8.0) + unit(rng) * std::log(300.0 / 8)); };
  auto category = [&] { return int64_t(rng() % uint64_t(categories)) + 1; };
  Synthetic s;
  for (int c = 1; c <= categories; ++c)
    s.truth.categories.push_back({c, "class" + std::to_string(c)});
  for (int i = 1; i <= images; ++i) {
    s.truth.images.push_back({i, "image" + std::to_string(i) + ".jpg", 640, 480});
    int objects = 1 + int(rng() % 13), made = 0;
    for (int o = 0; o < objects; ++o) {
      BoxXYWH box{unit(rng) * 500, unit(rng) * 380, size(), size()};
      int64_t cat = category();
      bool crowd = unit(rng) < 0.01;
      int64_t id = int64_t(s.truth.annotations.size()) + 1;
      s.truth.annotations.push_back(
          {id, i, cat, box, box[2] * box[3] * (0.5 + 0.4 * unit(rng)), crowd, false});
      int copies = 1 + int(rng() % 3);
      for (int copy = 0; copy < copies && made < dets_per_image; ++copy, ++made) {
        double jx = (unit(rng) - 0.5) * 0.3 * box[2], jy = (unit(rng) - 0.5) * 0.3 * box[3];
        BoxXYWH d{box[0] + jx, box[1] + jy, box[2] * (0.8 + 0.4 * unit(rng)),
                  box[3] * (0.8 + 0.4 * unit(rng))};
        s.detections.push_back({i, unit(rng) < 0.9 ? cat : category(), d, 0.3 + 0.7 * unit(rng)});
      }
    }
    for (; made < dets_per_image; ++made)
      s.detections.push_back(
          {i, category(), {unit(rng) * 600, unit(rng) * 440, size(), size()}, 0.6 * unit(rng)});
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Times COCO box evaluation on synthetic data");
  int images = 5000, categories = 80, dets = 100, repeat = 3;
  uint64_t seed = 1;
  std::vector<int> threads = {1, 0};
  std::string write;
  app.add_option("--images", images)->check(CLI::PositiveNumber);
  app.add_option("--categories", categories)->check(CLI::PositiveNumber);
  app.add_option("--dets", dets, "Detections per image")->check(CLI::PositiveNumber);
  app.add_option("--repeat", repeat, "Runs per thread count (the best is reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "Thread counts to time (0: one per core)")->delimiter(',');
  app.add_option("--seed", seed);
  app.add_option("--write", write, "Also write DIR/gt.json and DIR/dt.json");
  CLI11_PARSE(app, argc, argv);

  Synthetic s = Generate(images, categories, dets, seed);
  if (!write.empty()) {
    std::filesystem::create_directories(write);
    WriteCocoInstances(write + "/gt.json", s.truth);
    WriteCocoResults(write + "/dt.json", s.detections);
  }
  for (int t : threads) {
    double best = 1e30;
    CocoStats stats{};
    for (int r = 0; r < repeat; ++r) {
      auto start = std::chrono::steady_clock::now();
      stats = EvaluateCoco(s.truth, s.detections, {.threads = t}).stats;
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                                .count());
    }
    std::printf("{\"images\": %d, \"categories\": %d, \"objects\": %zu, \"detections\": %zu, "
                "\"threads\": %d, \"eval_s\": %.4f, \"AP\": %.6f, \"AP50\": %.6f}\n",
                images, categories, s.truth.annotations.size(), s.detections.size(), t, best,
                stats[0], stats[1]);
  }
  return 0;
}

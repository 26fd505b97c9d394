// dflow-detect generate; see generate.h.
#include "apps/detect/generate.h"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "apps/common/cli_checks.h"
#include "graph/status.h"
#include "graph/thread_pool.h"
#include "models/data/coco.h"
#include "models/data/image.h"
#include "models/data/video.h"

namespace dflow::detect_app {
namespace {

namespace fs = std::filesystem;

// "320x240" -> width 320, height 240.
void ParseSize(const std::string& size, models::SceneOptions& scene) {
  const size_t x = size.find('x');
  auto number = [&](size_t begin, size_t end, int64_t& value) {
    const char* last = size.data() + end;
    auto [ptr, ec] = std::from_chars(size.data() + begin, last, value);
    return ec == std::errc() && ptr == last && begin < end;
  };
  DFLOW_REQUIRE(x != std::string::npos && number(0, x, scene.width) &&
                    number(x + 1, size.size(), scene.height),
                "generate: --size '", size, "' is not WIDTHxHEIGHT, e.g. 320x240");
}

std::string ImageName(int64_t index) {
  char name[40];
  std::snprintf(name, sizeof name, "images/scene_%05lld.png", static_cast<long long>(index));
  return name;
}

// Generates and writes every image, `threads` at a time (PNG encoding
// costs more than drawing); returns each image's objects, by index, so that
// the dataset does not depend on the thread count.
std::vector<std::vector<models::SceneObject>> WriteImages(const GenerateSettings& s,
                                                          const models::SpriteSet* sprites) {
  std::vector<std::vector<models::SceneObject>> objects(static_cast<size_t>(s.images));
  ThreadPool pool(s.threads > 0 ? s.threads : ThreadPool::DefaultNumThreads(), "generate");
  constexpr int64_t kCostPerImage = 1 << 20;  // enough for one image per block
  pool.ParallelFor(s.images, kCostPerImage, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const auto index = static_cast<uint64_t>(i);
      models::Scene scene = sprites ? models::GenerateScene(s.scene, *sprites, index)
                                    : models::GenerateScene(s.scene, index);
      models::WritePng((fs::path(s.out) / ImageName(i)).string(), scene.image);
      objects[static_cast<size_t>(i)] = std::move(scene.objects);
    }
  });
  return objects;
}

// The scenes as one video's frames, in order (encoding is sequential).
std::vector<std::vector<models::SceneObject>> WriteVideo(const GenerateSettings& s,
                                                         const models::SpriteSet* sprites) {
  std::vector<std::vector<models::SceneObject>> objects;
  models::VideoWriterOptions options;
  options.fps = s.fps;
  models::VideoWriter video((fs::path(s.out) / s.video).string(), s.scene.height, s.scene.width, options);
  for (int64_t i = 0; i < s.images; ++i) {
    const auto index = static_cast<uint64_t>(i);
    models::Scene scene = sprites ? models::GenerateScene(s.scene, *sprites, index)
                                  : models::GenerateScene(s.scene, index);
    video.Write(scene.image);
    objects.push_back(std::move(scene.objects));
  }
  video.Close();
  return objects;
}

}  // namespace

void AddGenerateCommand(CLI::App& app, GenerateSettings& s) {
  CLI::App* generate = app.add_subcommand(
      "generate", "Write synthetic detection scenes (shapes on clutter) and their COCO file");
  models::SceneOptions& scene = s.scene;
  generate->add_option("--out", s.out, "Directory for images/ and annotations.json")->required();
  generate->add_option("--images", s.images, "Number of images")
      ->check(apps::IntegerRange(1, apps::kMaxGeneratedImages))
      ->capture_default_str();
  generate->add_option("--size", s.size, "Image size, WIDTHxHEIGHT")->capture_default_str();
  CLI::Option* classes =
      generate
          ->add_option("--classes", scene.num_classes,
                       "Classes, 1-10: circle square triangle diamond ring cross star hexagon crescent tee")
          ->capture_default_str();
  generate->add_option("--seed", scene.seed, "Seed: another seed gives held-out data")
      ->capture_default_str();
  generate->add_option("--min-objects", scene.min_objects, "Fewest objects per image")
      ->capture_default_str();
  generate->add_option("--max-objects", scene.max_objects, "Most objects per image")
      ->capture_default_str();
  generate->add_option("--min-size", scene.min_size, "Smallest box side, pixels")
      ->capture_default_str();
  generate->add_option("--max-size", scene.max_size,
                       "Largest box side, pixels (default: half the shorter image side)");
  generate->add_option("--occlusion", scene.occlusion,
                       "Most of an object that later ones may cover, 0-1")
      ->capture_default_str();
  generate->add_flag("!--plain", scene.textured, "Plain gradient backgrounds, no texture");
  generate->add_flag("!--no-distractors", scene.distractors, "Leave out lines, dots and blotches");
  CLI::Option* sprites = generate->add_option(
      "--sprites", s.sprites, "IDX file of sprites [count, height, width], drawn instead of shapes");
  CLI::Option* labels = generate->add_option(
      "--sprite-labels", s.sprite_labels, "IDX file of their labels [count]: class = label + 1");
  sprites->needs(labels)->excludes(classes);
  generate->add_option("--video", s.video,
                       "Write the scenes as the frames of this video in --out (.mp4, .mkv, .avi, .mov, .webm); "
                       "annotations.json names the frames 0, 1, ...");
  generate->add_option("--fps", s.fps, "--video: frames per second")->check(CLI::Range(0.1, 1000.0))->capture_default_str();
  generate->add_option("--threads", s.threads, "Threads (default: one per core)")
      ->check(apps::ThreadCount(/*zero_means_default=*/true));
  labels->needs(sprites);
}

int Generate(GenerateSettings s) {
  ParseSize(s.size, s.scene);
  std::optional<models::SpriteSet> sprites;
  if (!s.sprites.empty()) sprites = models::ReadSprites(s.sprites, s.sprite_labels);
  models::CheckSceneOptions(s.scene, sprites ? &*sprites : nullptr);  // before anything is written
  const fs::path out(s.out), annotations = out / "annotations.json";
  DFLOW_REQUIRE(s.video.empty() || (models::IsVideoFile(s.video) && fs::path(s.video).filename() == s.video),
                "generate: --video takes a file name with a video extension (.mp4, .mkv, .avi, .mov, .webm), got '",
                s.video, "'");
  fs::create_directories(s.video.empty() ? out / "images" : out);
  fs::remove(annotations);  // a stale file would describe other images
  const auto objects = s.video.empty() ? WriteImages(s, sprites ? &*sprites : nullptr)
                                       : WriteVideo(s, sprites ? &*sprites : nullptr);
  models::DetectionDataset dataset;
  dataset.categories = sprites ? models::SpriteCategories(*sprites)
                               : models::SceneCategories(s.scene.num_classes);
  for (int64_t i = 0; i < s.images; ++i) {
    dataset.images.push_back({i + 1, s.video.empty() ? ImageName(i) : std::to_string(i), s.scene.width,
                              s.scene.height});
    for (const models::SceneObject& object : objects[static_cast<size_t>(i)])
      dataset.annotations.push_back({.id = static_cast<int64_t>(dataset.annotations.size()) + 1,
                                     .image_id = i + 1,
                                     .category_id = object.category_id,
                                     .bbox = object.bbox,
                                     .area = static_cast<double>(object.area)});
  }
  // Written last: a dataset without annotations.json is visibly incomplete.
  models::WriteCocoInstances(annotations.string(), dataset);
  std::cout << "wrote " << s.images << (s.video.empty() ? " images of " : " frames of " + s.video + ", ") << s.scene.width << "x" << s.scene.height
            << " with " << dataset.annotations.size() << " objects of "
            << dataset.categories.size() << " classes and annotations.json to " << s.out << "\n";
  return 0;
}

}  // namespace dflow::detect_app

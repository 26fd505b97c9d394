// dflow-detect generate: synthetic detection scenes
// (models/data/scene_generator.h) as PNG files, or as the frames of a video,
// plus a COCO instances file.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "models/data/scene_generator.h"

namespace dflow::detect_app {

struct GenerateSettings {
  std::string out;
  int64_t images = 100;
  std::string size = "320x320";  // WIDTHxHEIGHT, into scene.width and scene.height
  models::SceneOptions scene;
  std::string sprites, sprite_labels;  // IDX files; empty: the shapes
  int threads = 0;                     // 0: one per core
  // A video file name (mp4, mkv, avi, ...) inside `out`: the scenes become
  // its frames, and annotations.json names each frame by its index ("0",
  // "1", ...), as `dflow-detect bench --video --gt` reads it.
  std::string video;
  double fps = 10;
};

// Adds the `generate` subcommand and its options to `app`.
void AddGenerateCommand(CLI::App& app, GenerateSettings& settings);
// Writes OUT/images/scene_NNNNN.png (or OUT/VIDEO) and, last, OUT/annotations.json.
int Generate(GenerateSettings settings);

}  // namespace dflow::detect_app

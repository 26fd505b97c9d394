// dflow-count generate: a synthetic field dataset (models/data/field_generator.h)
// as PNG files plus points.json.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "apps/count/commands.h"
#include "graph/status.h"
#include "models/data/field_generator.h"
#include "models/data/image.h"
#include "models/data/points_dataset.h"

namespace dflow::count_app {

int Generate(const GenerateSettings& settings) {
  namespace fs = std::filesystem;
  DFLOW_REQUIRE(settings.images > 0, "generate: --images must be positive");
  DFLOW_REQUIRE(settings.width > 0 && settings.height > 0, "generate: --width and --height must be positive");
  fs::create_directories(settings.out);
  models::FieldOptions options{.height = settings.height,
                               .width = settings.width,
                               .max_flowers = settings.max_flowers,
                               .distractors = settings.distractors,
                               .seed = settings.seed};
  std::vector<models::AnnotatedImage> images;
  int64_t points = 0;
  for (int64_t i = 0; i < settings.images; ++i) {
    models::FieldImage field = models::GenerateField(options, static_cast<uint64_t>(i));
    char name[32];
    std::snprintf(name, sizeof name, "field_%05lld.png", static_cast<long long>(i));
    std::string path = (fs::path(settings.out) / name).string();
    models::WritePng(path, field.image);
    points += static_cast<int64_t>(field.points.size());
    images.push_back({path, std::move(field.points)});
  }
  // Written last: a dataset without points.json is visibly incomplete.
  models::WritePointsJson(settings.out, images);
  std::cout << "wrote " << settings.images << " images of " << settings.width << "x"
            << settings.height << " (" << points << " flowers) and points.json to "
            << settings.out << "\n";
  return 0;
}

}  // namespace dflow::count_app

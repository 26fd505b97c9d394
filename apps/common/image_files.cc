// Image arguments; see image_files.h.
#include "apps/common/image_files.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "graph/status.h"
#include "models/data/image.h"

namespace dflow::apps {
namespace {

namespace fs = std::filesystem;

bool IsImageFile(const fs::path& path) {
  static const std::set<std::string> kExtensions = {".png", ".jpg", ".jpeg", ".bmp", ".tga",
                                                    ".gif", ".ppm", ".pgm", ".pnm"};
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return kExtensions.count(ext) > 0;
}

}  // namespace

std::vector<std::string> ListImages(const std::vector<std::string>& inputs) {
  std::vector<std::string> images;
  for (const std::string& input : inputs) {
    if (!fs::exists(input)) Fail(Code::kNotFound, input, " does not exist");
    if (!fs::is_directory(input)) {
      images.push_back(input);
      continue;
    }
    std::vector<std::string> found;
    for (const fs::directory_entry& e : fs::directory_iterator(input))
      if (e.is_regular_file() && IsImageFile(e.path())) found.push_back(e.path().string());
    if (found.empty())
      Fail(Code::kNotFound, "no image files in ", input, " (JPEG, PNG, BMP, TGA, GIF or PNM, by extension)");
    std::sort(found.begin(), found.end());
    images.insert(images.end(), found.begin(), found.end());
  }
  for (const std::string& path : images) models::ReadImageInfo(path);
  return images;
}

std::vector<std::string> UniqueOutputNames(const std::vector<std::string>& inputs,
                                           const std::string& suffix) {
  std::set<std::string> taken;
  std::vector<std::string> names;
  for (const std::string& input : inputs) {
    std::string stem = fs::path(input).stem().string(), name = stem + suffix;
    for (int n = 2; taken.count(name); ++n) name = stem + "_" + std::to_string(n) + suffix;
    taken.insert(name);
    names.push_back(name);
  }
  return names;
}

StagedOutputDir::StagedOutputDir(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) return;
  if (fs::exists(dir_) && !fs::is_directory(dir_))
    Fail(Code::kInvalidArgument, "output folder ", dir_, " exists and is not a folder");
  // Beside DIR, so that the final moves are renames within one file system.
  fs::path target = fs::absolute(dir_).lexically_normal();
  if (!target.has_filename()) target = target.parent_path();
  staging_ = (target.parent_path() / StrCat(".", target.filename().string(), ".partial.", ::getpid())).string();
  // The folders above DIR that do not exist yet are made now and, should the
  // command fail, removed again (deepest first).
  for (fs::path p = target.parent_path(); !p.empty() && !fs::exists(p); p = p.parent_path())
    created_.insert(created_.begin(), p);
  fs::create_directories(staging_);
}

StagedOutputDir::~StagedOutputDir() {
  if (!enabled() || committed_) return;
  std::error_code ignored;  // a destructor cannot report: the command's own error is on its way
  fs::remove_all(staging_, ignored);
  for (auto p = created_.rbegin(); p != created_.rend(); ++p) fs::remove(*p, ignored);  // empty ones only
}

std::string StagedOutputDir::StagingPath(const std::string& name) const {
  return (fs::path(staging_) / name).string();
}

std::string StagedOutputDir::FinalPath(const std::string& name) const { return (fs::path(dir_) / name).string(); }

void StagedOutputDir::Commit() {
  if (!enabled()) return;
  fs::create_directories(dir_);
  for (const fs::directory_entry& e : fs::directory_iterator(staging_))
    fs::rename(e.path(), fs::path(dir_) / e.path().filename());
  fs::remove(staging_);
  committed_ = true;
}

}  // namespace dflow::apps

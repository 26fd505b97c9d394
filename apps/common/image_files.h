// The image arguments of the apps' predict commands, and the folder their
// images go to, written all at once or not at all.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace dflow::apps {

// Files as given, directories expanded to their image files (by extension,
// sorted). Every image's header is read here, so a missing or bad file stops
// the command before anything is written; errors name the file.
std::vector<std::string> ListImages(const std::vector<std::string>& inputs);

// One output file name per input, "<stem><suffix>", made unique when two
// inputs share a stem (a/x.png and b/x.jpg give x<suffix> and x_2<suffix>).
std::vector<std::string> UniqueOutputNames(const std::vector<std::string>& inputs,
                                           const std::string& suffix);

// The output folder DIR of a command that must write all its files or none
// (predict's heatmaps and drawn boxes: a corrupt tenth image must not leave
// nine outputs behind). Files are written into a staging folder beside DIR
// and moved into DIR by Commit; destroyed before Commit (the command
// failed), the staging folder is removed and DIR is left as it was.
class StagedOutputDir {
 public:
  // An empty `dir`: the command writes no files here. Throws naming `dir`
  // when it exists and is not a folder, or the staging folder cannot be made.
  explicit StagedOutputDir(std::string dir);
  ~StagedOutputDir();
  StagedOutputDir(const StagedOutputDir&) = delete;
  StagedOutputDir& operator=(const StagedOutputDir&) = delete;

  bool enabled() const { return !dir_.empty(); }
  // Where to write the output `name` now, and where it will be once committed.
  std::string StagingPath(const std::string& name) const;
  std::string FinalPath(const std::string& name) const;
  // Creates DIR when needed and moves every staged file into it.
  void Commit();

 private:
  std::string dir_, staging_;
  std::vector<std::filesystem::path> created_;  // folders above DIR made for it, outermost first
  bool committed_ = false;
};

}  // namespace dflow::apps

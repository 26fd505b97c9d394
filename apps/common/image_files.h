// The image arguments of the apps' predict commands.
#pragma once

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

}  // namespace dflow::apps

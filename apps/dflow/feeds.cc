// Helpers shared by the subcommands that run a graph (run, profile).
#include <map>

#include "apps/dflow/commands.h"
#include "graph/npy.h"

namespace dflow::cli {

FeedList ReadFeeds(const std::vector<std::string>& specs) {
  FeedList feeds;
  std::map<std::string, std::string> seen;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      Fail(Code::kInvalidArgument, "--feed '", spec, "': expected NAME=FILE.npy");
    std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    if (!seen.emplace(name, path).second)
      Fail(Code::kInvalidArgument, "--feed: '", name, "' is fed twice");
    feeds.emplace_back(name, ReadNpy(path));
  }
  return feeds;
}

void AddRepeatable(CLI::App* command, const char* name, std::vector<std::string>& values,
                   const char* help) {
  command->add_option(name, values, help)
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

}  // namespace dflow::cli

// dflow plot RUN... -o curves.png|svg [--metric NAME...] [--smooth K]:
// training curves from the runs' RUN/metrics.jsonl (written by dflow-count
// and dflow-detect train), one panel per metric, one line per run, drawn by
// gnuplot (Debian's gnuplot-nox).
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "apps/common/cli_checks.h"
#include "apps/common/run_metrics.h"
#include "apps/dflow/commands.h"
#include "graph/status.h"

namespace dflow::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

struct PlotSettings {
  std::vector<std::string> runs, metrics;
  std::string out;
  int smooth = 1;
};

// A run's curve: step -> metrics.
std::map<int64_t, Json> ReadMetrics(const std::string& run) {
  const std::string path = run + "/metrics.jsonl";
  if (!fs::exists(path)) Fail(Code::kNotFound, "plot: ", path, " is missing (train writes it into its run directory)");
  std::map<int64_t, Json> steps = apps::ReadRunMetrics(run);
  if (steps.empty()) Fail(Code::kInvalidArgument, "plot: ", path, " holds no step");
  return steps;
}

// The metrics every run has (all but the step and the time), in first-seen
// order with the speed last.
std::vector<std::string> CommonMetrics(const std::vector<std::map<int64_t, Json>>& runs) {
  std::vector<std::string> names;
  for (const auto& [key, value] : runs.front().begin()->second.items())
    if (key != "step" && key != "time" && key != "img_per_s" && value.is_number()) names.push_back(key);
  names.push_back("img_per_s");
  std::erase_if(names, [&](const std::string& name) {
    for (const auto& run : runs)
      if (!run.begin()->second.contains(name)) return true;
    return false;
  });
  return names;
}

// The plot's data files and script: removed however the command ends (a run
// without the metric asked for fails part-way through writing them).
struct ScratchDir {
  explicit ScratchDir(fs::path p) : path(std::move(p)) { fs::create_directories(path); }
  ~ScratchDir() {
    std::error_code ignored;  // a destructor cannot report: the command's own error is on its way
    fs::remove_all(path, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  fs::path path;
};

// Gnuplot's string syntax: single quotes, doubled inside.
std::string Quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

void Plot(const PlotSettings& s) {
  std::vector<std::map<int64_t, Json>> runs;
  for (const std::string& run : s.runs) runs.push_back(ReadMetrics(run));
  std::vector<std::string> metrics = s.metrics.empty() ? CommonMetrics(runs) : s.metrics;
  DFLOW_REQUIRE(!metrics.empty(), "plot: the runs share no metric");
  const std::string ext = fs::path(s.out).extension().string();
  DFLOW_REQUIRE(ext == ".png" || ext == ".svg", "plot: -o must end in .png or .svg, got '", s.out, "'");
  // One data file per run: step, then each metric (smoothed by a moving mean of K steps).
  const ScratchDir scratch_dir(fs::temp_directory_path() / StrCat("dflow-plot-", getpid()));
  const fs::path& scratch = scratch_dir.path;
  std::vector<std::string> data;
  for (size_t r = 0; r < runs.size(); ++r) {
    data.push_back((scratch / StrCat("run", r, ".dat")).string());
    std::ofstream out(data.back());
    std::vector<std::vector<double>> window(metrics.size());
    for (const auto& [step, entry] : runs[r]) {
      out << step;
      for (size_t m = 0; m < metrics.size(); ++m) {
        if (!entry.contains(metrics[m]) || !entry[metrics[m]].is_number())
          Fail(Code::kInvalidArgument, "plot: ", s.runs[r], " has no metric '", metrics[m], "' at step ", step);
        window[m].push_back(entry[metrics[m]].get<double>());
        if (static_cast<int>(window[m].size()) > s.smooth) window[m].erase(window[m].begin());
        double sum = 0;
        for (double v : window[m]) sum += v;
        out << " " << sum / static_cast<double>(window[m].size());
      }
      out << "\n";
    }
  }
  std::ofstream script(scratch / "plot.gp");
  script << "set terminal " << (ext == ".png" ? "pngcairo" : "svg") << " size 900," << 260 * metrics.size()
         << " noenhanced\nset output " << Quoted(s.out) << "\nset multiplot layout " << metrics.size()
         << ",1\nset grid\nset key outside right\nset xlabel 'step'\n";
  for (size_t m = 0; m < metrics.size(); ++m) {
    script << "set ylabel " << Quoted(metrics[m]) << "\nplot ";
    for (size_t r = 0; r < runs.size(); ++r)
      script << (r ? ", " : "") << Quoted(data[r]) << " using 1:" << m + 2 << " with lines lw 2 title "
             << Quoted(fs::path(s.runs[r]).filename().string());
    script << "\n";
  }
  script << "unset multiplot\n";
  script.close();
  const std::string command = "gnuplot " + Quoted((scratch / "plot.gp").string()) + " 2>&1";
  FILE* gnuplot = popen(command.c_str(), "r");
  if (!gnuplot) Fail(Code::kUnavailable, "plot: cannot run gnuplot");
  std::string output;
  char buffer[512];
  while (fgets(buffer, sizeof buffer, gnuplot)) output += buffer;
  const int status = pclose(gnuplot);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) == 127)
    Fail(Code::kUnavailable, "plot: gnuplot is not installed (Debian's gnuplot-nox; ./dev installs it)");
  if (WEXITSTATUS(status) != 0) Fail(Code::kInternal, "plot: gnuplot failed: ", output);
  std::cout << "plot: " << metrics.size() << " metric(s) of " << runs.size() << " run(s) in " << s.out << "\n";
}

}  // namespace

void AddPlotCommand(CLI::App& app) {
  auto settings = std::make_shared<PlotSettings>();
  CLI::App* cmd = app.add_subcommand("plot", "Draw the training curves of runs (their metrics.jsonl) with gnuplot");
  cmd->add_option("runs", settings->runs, "Run directories")->required();
  cmd->add_option("-o,--out", settings->out, "Picture to write: .png or .svg")->required();
  cmd->add_option("--metric", settings->metrics, "Metrics to draw (default: every one the runs share)");
  cmd->add_option("--smooth", settings->smooth, "Moving mean over this many steps (default 1: none)")
      ->check(apps::IntegerRange(1, 100000));
  cmd->callback([settings] { Plot(*settings); });
}

}  // namespace dflow::cli

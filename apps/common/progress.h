// The training progress line of the apps: step, a bar, the app's named
// metrics (each a moving average), images/s and time left, redrawn in place
// on a terminal and printed every `every` steps otherwise.
#pragma once

#include <chrono>
#include <fstream>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dflow::apps {

class Progress {
 public:
  Progress(int64_t first_step, int64_t total_steps, int64_t every);
  using Metrics = std::vector<std::pair<std::string, double>>;
  // Records step `step` (1-based) of `images` images and its metrics, e.g.
  // {{"loss", 0.3}, {"mae", 1.2}}; every step names the same ones.
  // `recorded` values (the learning rate) go to the metrics file alone: not
  // averaged, not on the progress line.
  void Update(int64_t step, int64_t images, const Metrics& metrics, const Metrics& recorded = {});
  // Ends the line on a terminal.
  void Finish();
  // From now on every Update also appends a JSON line to `path`
  // ({"step", "time" (Unix seconds), "img_per_s", and the step's own
  // metrics}), flushed at once so that others can follow it. A resumed run
  // appends after its checkpoint's step: a reader keeps each step's last line.
  void RecordTo(const std::string& path);
  double images_per_second() const;

 private:
  std::string Line(int64_t step) const;

  int64_t first_step_, total_steps_, every_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  int64_t images_ = 0;
  Metrics averages_;  // exponential moving averages
  bool seen_ = false;
  std::ofstream record_;
};

// The file of a run's per-step metrics, RUN/metrics.jsonl.
std::string MetricsFile(const std::string& run_dir);

// The end of a run: "finished|stopped at step N: ..." and the summary JSON
// (with the checkpoint when `checkpoint` is set: the chief's, with workers).
void PrintSummary(bool stopped, int64_t step, const Progress& progress, double input_wait_fraction,
                  const std::optional<std::string>& checkpoint);

}  // namespace dflow::apps

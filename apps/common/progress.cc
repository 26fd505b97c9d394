// The progress line; see progress.h.
#include "apps/common/progress.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include <nlohmann/json.hpp>

#include "graph/status.h"

namespace dflow::apps {
namespace {

std::string Duration(double seconds) {
  char buffer[32];
  long s = static_cast<long>(seconds + 0.5);
  std::snprintf(buffer, sizeof buffer, "%ld:%02ld", s / 60, s % 60);
  return buffer;
}

}  // namespace

Progress::Progress(int64_t first_step, int64_t total_steps, int64_t every)
    : first_step_(first_step),
      total_steps_(total_steps),
      every_(every < 1 ? 1 : every),
      terminal_(isatty(STDOUT_FILENO) != 0),
      start_(std::chrono::steady_clock::now()) {}

double Progress::images_per_second() const {
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return seconds > 0 ? static_cast<double>(images_) / seconds : 0;
}

void Progress::Update(int64_t step, int64_t images, const Metrics& metrics, const Metrics& recorded) {
  // Rates count from the end of the first step, which also builds the executor.
  if (seen_)
    images_ += images;
  else
    start_ = std::chrono::steady_clock::now();
  // A 0.9 moving average: single batches are noisy.
  if (!seen_) averages_ = metrics;
  for (size_t i = 0; i < metrics.size() && i < averages_.size(); ++i)
    averages_[i].second = 0.9 * averages_[i].second + 0.1 * metrics[i].second;
  seen_ = true;
  if (record_.is_open()) {
    nlohmann::json line = {{"step", step},
                           {"time", std::chrono::duration<double>(
                                        std::chrono::system_clock::now().time_since_epoch()).count()},
                           {"img_per_s", images_per_second()}};
    for (const auto& [name, value] : metrics) line[name] = value;
    for (const auto& [name, value] : recorded) line[name] = value;
    record_ << line.dump() << "\n" << std::flush;
  }
  if (terminal_)
    std::cout << "\r" << Line(step) << std::flush;
  else if (step % every_ == 0 || step == total_steps_ || step == first_step_ + 1)
    std::cout << Line(step) << "\n" << std::flush;
}

std::string Progress::Line(int64_t step) const {
  constexpr int kWidth = 24;
  int filled = total_steps_ > 0 ? static_cast<int>(kWidth * step / total_steps_) : 0;
  std::string bar = std::string(filled, '=') + std::string(kWidth - filled, ' ');
  double rate = images_per_second();
  double steps_per_second = images_ > 0 ? rate * static_cast<double>(step - first_step_ - 1) /
                                              static_cast<double>(images_) : 0;
  double left = steps_per_second > 0 ? static_cast<double>(total_steps_ - step) / steps_per_second : 0;
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "step %lld/%lld [", static_cast<long long>(step),
                static_cast<long long>(total_steps_));
  std::string line = buffer + bar + "]";
  for (const auto& [name, value] : averages_) {
    std::snprintf(buffer, sizeof buffer, " %.3f ", value);
    line += " " + name + buffer;
  }
  std::snprintf(buffer, sizeof buffer, " %.1f img/s  eta %s", rate, Duration(left).c_str());
  return line + buffer;
}

void Progress::RecordTo(const std::string& path) {
  record_.open(path, std::ios::app);
  DFLOW_REQUIRE(record_.is_open(), "cannot open ", path, " to record the metrics: ", std::strerror(errno));
}

std::string MetricsFile(const std::string& run_dir) { return run_dir + "/metrics.jsonl"; }

void Progress::Finish() {
  if (terminal_) std::cout << "\n";
}

void PrintSummary(bool stopped, int64_t step, const Progress& progress, double input_wait_fraction,
                  const std::optional<std::string>& checkpoint) {
  std::cout << (stopped ? "stopped" : "finished") << " at step " << step << ": "
            << progress.images_per_second() << " img/s, waited for input "
            << 100 * input_wait_fraction << "% of the time\n";
  nlohmann::json summary = {{"step", step},
                            {"img_per_s", progress.images_per_second()},
                            {"input_wait_fraction", input_wait_fraction}};
  if (checkpoint) {
    std::cout << "checkpoint " << *checkpoint << "\n";
    summary["checkpoint"] = *checkpoint;
  }
  std::cout << summary.dump() << "\n";
}

}  // namespace dflow::apps

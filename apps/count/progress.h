// The training progress line: step, loss, count MAE, images/s and time left,
// redrawn in place on a terminal and printed every `every` steps otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace dflow::count_app {

class Progress {
 public:
  Progress(int64_t first_step, int64_t total_steps, int64_t every);
  // Records step `step` (1-based) of `images` images.
  void Update(int64_t step, int64_t images, double loss, double mae);
  // Ends the line on a terminal.
  void Finish();
  double images_per_second() const;

 private:
  std::string Line(int64_t step) const;

  int64_t first_step_, total_steps_, every_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  int64_t images_ = 0;
  double loss_ = 0, mae_ = 0;  // exponential moving averages
  bool seen_ = false;
};

}  // namespace dflow::count_app

// The timing the side-by-side benchmarks (bench/compare_torch,
// bench/compare_detect) share with their PyTorch peers: seconds per call
// after two warm-up calls, as the reference scripts' timed(), the process's
// CPU time, and its peak resident memory.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <functional>

namespace dflow::bench {

// The process's CPU time (user + system, all threads) in seconds.
inline double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Seconds per call after two warm-up calls, as torch_models.py's timed();
// cpu_s (if given) gets the CPU seconds per call, which a loaded machine
// inflates much less than the wall time (the pool's threads sleep, never spin).
inline double Timed(const std::function<void()>& fn, int n, double* cpu_s = nullptr) {
  for (int i = 0; i < 2; ++i) fn();
  double cpu_start = CpuSeconds();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) fn();
  if (cpu_s) *cpu_s = (CpuSeconds() - cpu_start) / n;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / n;
}

// The process's peak resident set so far (getrusage's ru_maxrss), MiB.
inline double PeakRssMb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

}  // namespace dflow::bench

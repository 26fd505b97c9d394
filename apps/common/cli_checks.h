// The range checks of every program's numeric options (dflow, dflow server,
// dflow-count, dflow-detect), written once so that each says in words what
// was wrong ("--steps must be at least 1, got 0"), and the one cap on thread
// counts: a thread count is a resource request, and an absurd one (--threads
// 100000) would create threads until the machine refuses other processes.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace dflow::apps {

// The most threads any one thread-count option may ask for. Fixed rather
// than a multiple of the cores, so that a command line accepted on one
// machine is accepted on another; well above what helps on any machine.
inline constexpr int64_t kMaxThreads = 1024;
// The most images one `generate` writes: far beyond a useful synthetic
// dataset, small enough that a mistyped count fails at once instead of
// running for hours.
inline constexpr int64_t kMaxGeneratedImages = 100000;
// The most data-parallel worker processes one `train --workers` starts.
inline constexpr int64_t kMaxWorkers = 256;

// An integer option that must lie in [min, max]. CLI11 names the option
// before the message ("--steps: must be at least 1, got 0"); a value that is
// not a whole number is refused here too, naming it.
CLI::Validator IntegerRange(int64_t min, int64_t max);
// An integer option that must be at least `min` (no upper bound to print).
CLI::Validator AtLeast(int64_t min);
// A real option that must be greater than 0.
CLI::Validator PositiveReal();
// A real option that must be 0 or more.
CLI::Validator NonNegativeReal();
// A thread count: 1 .. kMaxThreads, or 0 as well when `zero_means_default`
// (the option's "one per core").
CLI::Validator ThreadCount(bool zero_means_default = false);

// The same check for a value that did not come from the command line (a
// run's config.json): kInvalidArgument naming `what` unless 1 <= value <=
// kMaxThreads.
void CheckThreadCount(const std::string& what, int64_t value);

}  // namespace dflow::apps

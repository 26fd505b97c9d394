// Option range checks; see cli_checks.h.
#include "apps/common/cli_checks.h"

#include <charconv>
#include <cmath>
#include <optional>

#include "graph/status.h"

namespace dflow::apps {
namespace {

std::optional<int64_t> ParseInteger(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end) return std::nullopt;
  return value;
}

// The message for `value` outside [min, max]; empty when it is inside.
// INT64_MAX as `max` means unbounded, and is not printed.
std::string RangeMessage(int64_t value, int64_t min, int64_t max) {
  if (value >= min && value <= max) return "";
  if (max == INT64_MAX) return StrCat("must be at least ", min, ", got ", value);
  if (value > max) return StrCat("must be at most ", max, ", got ", value);
  return StrCat("must be between ", min, " and ", max, ", got ", value);
}

}  // namespace

CLI::Validator IntegerRange(int64_t min, int64_t max) {
  auto check = [min, max](std::string& input) -> std::string {
    std::optional<int64_t> value = ParseInteger(input);
    if (!value) return StrCat("expected a whole number, got '", input, "'");
    return RangeMessage(*value, min, max);
  };
  std::string description = max == INT64_MAX ? StrCat("at least ", min) : StrCat(min, " to ", max);
  return CLI::Validator(check, description, "IntegerRange");
}

CLI::Validator AtLeast(int64_t min) { return IntegerRange(min, INT64_MAX); }

namespace {

// A real option that must be finite and above 0 (or at least 0 when `zero_ok`).
CLI::Validator RealAbove0(bool zero_ok) {
  auto check = [zero_ok](std::string& input) -> std::string {
    double value = 0;
    try {
      size_t used = 0;
      value = std::stod(input, &used);
      if (used != input.size()) return StrCat("expected a number, got '", input, "'");
    } catch (const std::exception&) {
      return StrCat("expected a number, got '", input, "'");
    }
    if (std::isfinite(value) && (value > 0 || (zero_ok && value == 0))) return "";
    return StrCat("must be a number ", zero_ok ? "of 0 or more" : "greater than 0", ", got ", input);
  };
  return CLI::Validator(check, zero_ok ? "0 or more" : "greater than 0", "RealAbove0");
}

}  // namespace

CLI::Validator PositiveReal() { return RealAbove0(false); }

CLI::Validator NonNegativeReal() { return RealAbove0(true); }

CLI::Validator ThreadCount(bool zero_means_default) { return IntegerRange(zero_means_default ? 0 : 1, kMaxThreads); }

void CheckThreadCount(const std::string& what, int64_t value) {
  std::string message = RangeMessage(value, 1, kMaxThreads);
  if (!message.empty()) Fail(Code::kInvalidArgument, what, " ", message);
}

}  // namespace dflow::apps

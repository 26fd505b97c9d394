// Numbers in text annotation files; see text_numbers.h.
#include "models/data/text_numbers.h"

#include <charconv>
#include <cmath>

#include "graph/status.h"

namespace dflow::models {
namespace {

std::string_view Trim(std::string_view text) {
  const char* spaces = " \t\r\n";
  size_t begin = text.find_first_not_of(spaces);
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(spaces) - begin + 1);
}

}  // namespace

double ParseFiniteNumber(std::string_view text, const std::string& where) {
  std::string_view field = Trim(text);
  double value = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || ec != std::errc() || end != field.data() + field.size() ||
      !std::isfinite(value))
    Fail(Code::kInvalidArgument, where, ": '", text, "' is not a finite number");
  return value;
}

int64_t ParseWholeNumber(std::string_view text, const std::string& where) {
  std::string_view field = Trim(text);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || ec != std::errc() || end != field.data() + field.size())
    Fail(Code::kInvalidArgument, where, ": '", text, "' is not a whole number");
  return value;
}

std::string FormatNumber(double value) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, end);
}

}  // namespace dflow::models

#include "graph/json.h"

#include <charconv>
#include <cstdlib>
#include <string>

#include "graph/status.h"

namespace dflow {

void CheckJsonDepth(std::string_view text, std::string_view source, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        Fail(Code::kInvalidArgument, "'", source, "': JSON nested more than ", max_depth,
             " levels deep (at byte ", i, ")");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

std::string CutForMessage(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  return StrCat(text.substr(0, max_chars), "... (", text.size() - max_chars, " more characters)");
}

std::string JsonErrorMessage(const nlohmann::json::exception& e) {
  std::string_view message = e.what();
  size_t bracket = message.find("] ");
  if (bracket != std::string_view::npos) message.remove_prefix(bracket + 2);
  return CutForMessage(message);
}

template <typename JsonT>
JsonT ParseJson(std::string_view text, std::string_view source) {
  CheckJsonDepth(text, source);
  try {
    return JsonT::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number too large for a double (1e999)
    Fail(Code::kInvalidArgument, "'", source, "': not valid JSON: ", JsonErrorMessage(e));
  }
}
template nlohmann::json ParseJson<nlohmann::json>(std::string_view, std::string_view);
template nlohmann::ordered_json ParseJson<nlohmann::ordered_json>(std::string_view,
                                                                  std::string_view);

namespace {

template <typename JsonT>
std::string Shown(const JsonT& value, size_t max_chars) {
  // Values come from ParseJson, so their depth is bounded and dump() cannot
  // overflow the stack.
  return CutForMessage(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                       max_chars);
}

}  // namespace

std::string JsonForMessage(const nlohmann::json& value, size_t max_chars) {
  return Shown(value, max_chars);
}

std::string JsonForMessage(const nlohmann::ordered_json& value, size_t max_chars) {
  return Shown(value, max_chars);
}

double ShortestDecimal(float value) {
  char text[32];
  char* end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::strtod(std::string(text, end).c_str(), nullptr);
}

}  // namespace dflow

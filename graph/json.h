// JSON that comes from outside the process (graph files, wire messages,
// cluster documents, datasets, checkpoint headers) is parsed here, with its
// nesting depth bounded, and is shown in error messages cut to a bounded
// length. nlohmann's serializer and destructor recurse once per nesting
// level, so 100,000 levels of "[[[[...]]]]" would overflow the stack the
// first time such a value was printed in a message.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace dflow {

// No document dflow reads nests more than a few levels; 256 leaves room.
inline constexpr int kMaxJsonDepth = 256;
// Longest piece of untrusted JSON (or of a parser message quoting it) that
// an error message shows.
inline constexpr size_t kMaxJsonInMessage = 200;

// Throws kInvalidArgument naming `source` when arrays and objects in `text`
// nest deeper than `max_depth`. Only counts brackets outside strings; syntax
// errors are left to the parser.
void CheckJsonDepth(std::string_view text, std::string_view source,
                    int max_depth = kMaxJsonDepth);

// `text` cut to `max_chars` (with "..." when cut), for error messages.
std::string CutForMessage(std::string_view text, size_t max_chars = kMaxJsonInMessage);

// nlohmann's what() without its "[json.exception.parse_error.101] " id,
// cut to a bounded length: a parse error quotes the token it stopped at.
std::string JsonErrorMessage(const nlohmann::json::exception& e);

// Parses untrusted JSON: CheckJsonDepth, then the parser. A syntax error
// or a number too large for a double (1e999) throws kInvalidArgument
// "'<source>': not valid JSON: <where and why>".
template <typename JsonT = nlohmann::json>
JsonT ParseJson(std::string_view text, std::string_view source);
extern template nlohmann::json ParseJson<nlohmann::json>(std::string_view, std::string_view);
extern template nlohmann::ordered_json ParseJson<nlohmann::ordered_json>(std::string_view,
                                                                         std::string_view);

// A JSON value as an error message shows it: its text, cut to `max_chars`.
// Never throws (invalid UTF-8 is replaced).
std::string JsonForMessage(const nlohmann::json& value, size_t max_chars = kMaxJsonInMessage);
std::string JsonForMessage(const nlohmann::ordered_json& value,
                           size_t max_chars = kMaxJsonInMessage);

// A finite float32 as the double of its shortest decimal text, for JSON to
// show 0.1 rather than 0.10000000149011612 (the double reads back as the
// same float).
double ShortestDecimal(float value);

}  // namespace dflow

// Errors in dflow: an exception carrying a status code and a message that names
// what was wrong (node, op, device, shapes). No abort() on user input anywhere.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dflow {

enum class Code {
  kInvalidArgument,     // the caller passed something malformed (shape, dtype, attr, file)
  kNotFound,            // a named node, op, kernel, file or variable does not exist
  kAlreadyExists,       // a name is taken
  kFailedPrecondition,  // the system is not in a state to do it (uninitialised variable)
  kOutOfRange,          // an index or value outside its valid range
  kUnimplemented,       // no kernel for this op/device/dtype
  kDataLoss,            // a corrupt or truncated file
  kCancelled,           // the step was cancelled by an earlier error
  kUnavailable,         // a peer or resource cannot be reached
  kInternal,            // a broken invariant inside dflow (a bug)
};

std::string_view CodeName(Code code);

class Error : public std::runtime_error {
 public:
  Error(Code code, std::string message);
  Code code() const { return code_; }
  // The message without the "InvalidArgument: " prefix that what() carries.
  const std::string& message() const { return message_; }

 private:
  Code code_;
  std::string message_;
};

// Concatenates anything streamable: StrCat("node '", name, "' has ", n, " inputs").
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

template <typename... Args>
[[noreturn]] void Fail(Code code, const Args&... args) {
  throw Error(code, StrCat(args...));
}

// Throws kInvalidArgument with the message when the condition is false.
#define DFLOW_REQUIRE(cond, ...)                                   \
  do {                                                             \
    if (!(cond)) ::dflow::Fail(::dflow::Code::kInvalidArgument, __VA_ARGS__); \
  } while (0)

}  // namespace dflow

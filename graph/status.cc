#include "graph/status.h"

namespace dflow {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kNotFound: return "NotFound";
    case Code::kAlreadyExists: return "AlreadyExists";
    case Code::kFailedPrecondition: return "FailedPrecondition";
    case Code::kOutOfRange: return "OutOfRange";
    case Code::kUnimplemented: return "Unimplemented";
    case Code::kDataLoss: return "DataLoss";
    case Code::kCancelled: return "Cancelled";
    case Code::kUnavailable: return "Unavailable";
    case Code::kInternal: return "Internal";
  }
  return "Unknown";
}

Error::Error(Code code, std::string message)
    : std::runtime_error(StrCat(CodeName(code), ": ", message)),
      code_(code),
      message_(std::move(message)) {}

}  // namespace dflow

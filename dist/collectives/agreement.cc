// The agreement before each collective: every rank sends its signature to
// rank 0, which compares them and answers all ranks with one verdict, so a
// mismatch or a missing rank is reported identically everywhere.
#include <algorithm>
#include <map>

#include "dist/collectives/communicator.h"

namespace dflow::dist {
namespace {

const char* const kAgreeTag = "collective/agree";
const char* const kVerdictTag = "collective/verdict";

// A verdict is one code byte (0: go ahead) followed by the error message.
Bytes EncodeVerdict(const std::optional<Error>& error) {
  if (!error) return Bytes{0};
  Bytes bytes(1 + error->message().size());
  bytes[0] = static_cast<uint8_t>(static_cast<int>(error->code()) + 1);
  std::copy(error->message().begin(), error->message().end(), bytes.begin() + 1);
  return bytes;
}

std::optional<Error> DecodeVerdict(const Bytes& bytes) {
  if (bytes.empty() || bytes[0] == 0) return std::nullopt;
  return Error(static_cast<Code>(bytes[0] - 1), std::string(bytes.begin() + 1, bytes.end()));
}

std::string JoinRanks(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

// "rank 0, 1: all_reduce(sum) 'a' float32[4] #3; rank 2: broadcast 'b' ..."
std::string DescribeDisagreement(const std::vector<std::string>& seen) {
  std::map<std::string, std::vector<int>> ranks_by_signature;
  std::vector<std::string> order;
  for (int r = 0; r < static_cast<int>(seen.size()); ++r) {
    if (seen[r].empty()) continue;
    if (!ranks_by_signature.count(seen[r])) order.push_back(seen[r]);
    ranks_by_signature[seen[r]].push_back(r);
  }
  std::string text;
  for (const std::string& signature : order)
    text += (text.empty() ? "" : "; ") +
            StrCat("rank ", JoinRanks(ranks_by_signature[signature]), ": ", signature);
  return text;
}

}  // namespace

std::string CollectiveSignature::ToString() const {
  return StrCat(kind, " '", name, "' ", DTypeName(dtype), shape.ToString(), " #", sequence);
}

void Communicator::Agree(const CollectiveSignature& signature) {
  if (num_ranks() == 1) return;
  if (rank() == 0) {
    AgreeAsCoordinator(signature, NextDeadline());
  } else {
    // Rank 0 may wait a whole timeout for a missing rank before answering.
    AgreeAsMember(signature, NextDeadline() + options_.timeout);
  }
}

void Communicator::AgreeAsCoordinator(const CollectiveSignature& signature, Deadline deadline) {
  std::vector<std::string> seen(num_ranks());
  seen[0] = signature.ToString();
  std::vector<int> missing;
  std::optional<Error> verdict;
  for (int r = 1; r < num_ranks() && !verdict; ++r) {
    try {
      Bytes bytes = link_.Recv(r, kAgreeTag, deadline);
      seen[r].assign(bytes.begin(), bytes.end());
    } catch (const Error& e) {
      if (e.code() != Code::kUnavailable) throw;
      // A rank known to be gone: say that (it names the rank), not "rank r is late".
      if (link_.LostRank()) verdict = Error(Code::kUnavailable, e.message());
      missing.push_back(r);
    }
  }
  std::string disagreement = DescribeDisagreement(seen);
  bool agreed = disagreement.find("; ") == std::string::npos;
  if (verdict) {
    // Already decided: a rank is gone.
  } else if (!missing.empty()) {
    verdict = Error(Code::kUnavailable,
                    StrCat("rank ", JoinRanks(missing), " did not reach collective ", seen[0],
                           " within ", options_.timeout.count(), " ms",
                           agreed ? "" : "; and the others disagree: " + disagreement));
  } else if (!agreed) {
    verdict = Error(Code::kFailedPrecondition,
                    StrCat("ranks called different collectives: ", disagreement));
  }
  for (int r = 1; r < num_ranks(); ++r) {
    try {
      link_.Send(r, kVerdictTag, EncodeVerdict(verdict));
    } catch (const Error&) {
      if (!verdict) throw;  // the verdict is already an error; the others detect it too
    }
  }
  if (verdict) throw *verdict;
}

void Communicator::AgreeAsMember(const CollectiveSignature& signature, Deadline deadline) {
  std::string text = signature.ToString();
  link_.Send(0, kAgreeTag, Bytes(text.begin(), text.end()));
  Bytes answer;
  try {
    answer = link_.Recv(0, kVerdictTag, deadline);
  } catch (const Error& e) {
    if (e.code() != Code::kUnavailable || link_.LostRank()) throw;  // a lost rank: the link names it
    Fail(Code::kUnavailable, "rank 0, which coordinates the agreement, did not answer for ",
         text, " within ", 2 * options_.timeout.count(), " ms");
  }
  if (std::optional<Error> verdict = DecodeVerdict(answer)) throw *verdict;
}

}  // namespace dflow::dist

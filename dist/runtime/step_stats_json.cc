#include "dist/runtime/step_stats_json.h"

#include "graph/json.h"
#include <nlohmann/json.hpp>

#include "graph/status.h"

namespace dflow::dist {

using json = nlohmann::json;

json StepStatsToJson(const RunMetadata& metadata) {
  json stats = json::array();
  for (const NodeExecStats& s : metadata.step_stats)
    stats.push_back({{"node", s.node}, {"op", s.op}, {"device", s.device}, {"start_ns", s.start_ns},
                     {"end_ns", s.end_ns}, {"thread", s.thread}, {"outputs", s.outputs},
                     {"output_bytes", s.output_bytes}, {"transfer", s.transfer}});
  return {{"peak_bytes", metadata.peak_bytes}, {"start_clock_ns", metadata.start_clock_ns},
          {"step_stats", std::move(stats)}};
}

namespace {

NodeExecStats StatsFromJson(const json& doc) {
  NodeExecStats s;
  s.node = doc.at("node").get<std::string>();
  s.op = doc.at("op").get<std::string>();
  s.device = doc.at("device").get<std::string>();
  s.start_ns = doc.at("start_ns").get<int64_t>();
  s.end_ns = doc.at("end_ns").get<int64_t>();
  s.thread = doc.at("thread").get<int>();
  s.outputs = doc.at("outputs").get<std::vector<std::string>>();
  s.output_bytes = doc.at("output_bytes").get<int64_t>();
  s.transfer = doc.value("transfer", std::string());
  if (s.start_ns < 0 || s.end_ns < s.start_ns || s.output_bytes < 0)
    Fail(Code::kInvalidArgument, "node '", s.node, "' has times [", s.start_ns, ", ", s.end_ns,
         "] or output_bytes ", s.output_bytes, " out of range");
  return s;
}

}  // namespace

int64_t AppendStepStats(const std::string& reply_text, const std::string& task, RunMetadata& metadata) {
  std::vector<NodeExecStats> stats;
  int64_t peak = 0, start_clock_ns = 0;
  try {
    json doc = ParseJson(reply_text, StrCat("the trace of task ", task));
    peak = doc.at("peak_bytes").get<int64_t>();
    start_clock_ns = doc.value("start_clock_ns", int64_t{0});
    for (const json& entry : doc.at("step_stats")) stats.push_back(StatsFromJson(entry));
  } catch (const json::exception& e) {
    Fail(Code::kInvalidArgument, "the trace of task ", task, " is malformed: ", JsonErrorMessage(e));
  } catch (const Error& e) {
    Fail(Code::kInvalidArgument, "the trace of task ", task, " is malformed: ", e.message());
  }
  metadata.peak_bytes = std::max(metadata.peak_bytes, peak);
  for (NodeExecStats& s : stats) metadata.step_stats.push_back(std::move(s));
  return start_clock_ns;
}

}  // namespace dflow::dist

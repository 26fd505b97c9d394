// Step traces: Chrome trace-event JSON (one complete "X" event per node; a
// process per device, a thread per executor thread) and a text summary.
#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "graph/file.h"
#include "graph/run_metadata.h"
#include "graph/status.h"

namespace dflow {
namespace {

using Json = nlohmann::ordered_json;

std::string FormatDuration(int64_t ns) {
  char buf[32];
  if (ns < 1000)
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  else if (ns < 1000000)
    std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  else if (ns < 1000000000)
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
  return buf;
}

std::string FormatBytes(int64_t bytes) {
  char buf[32];
  if (bytes < 1024)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  else if (bytes < (1 << 20))
    std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
  else if (bytes < (1LL << 30))
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / 1073741824.0);
  return buf;
}

std::string Percent(int64_t part, int64_t whole) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}

// Renders rows as columns padded to their widest cell; columns listed in
// `right` are right-aligned (numbers), the rest left-aligned.
std::string Table(const std::vector<std::vector<std::string>>& rows, std::vector<bool> right) {
  std::vector<size_t> width(right.size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (const auto& row : rows) {
    std::string line = " ";
    for (size_t c = 0; c < row.size(); ++c) {
      std::string pad(width[c] - row[c].size(), ' ');
      line += "  " + (right[c] ? pad + row[c] : row[c] + pad);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

int64_t Duration(const NodeExecStats& s) { return std::max<int64_t>(0, s.end_ns - s.start_ns); }

}  // namespace

namespace {

// A device as (task, device within it): "/job:worker/replica:0/task:1/device:CPU:0"
// -> {"/job:worker/replica:0/task:1", "/device:CPU:0"}; a device named
// without its task ("/device:CPU:0") is this process's.
std::pair<std::string, std::string> SplitDevice(const std::string& device) {
  if (device.empty()) return {"(unplaced)", "(unplaced)"};
  size_t at = device.find("/device:");
  if (at == std::string::npos || at == 0) return {"this process", device};
  return {device.substr(0, at), device.substr(at)};
}

// Process and thread tracks: one process per task, one thread per device and
// executor thread, each named once.
class Tracks {
 public:
  explicit Tracks(Json& events) : events_(events) {}

  std::pair<int, int> Of(const NodeExecStats& s) {
    auto [task, device] = SplitDevice(s.device);
    auto [process, new_process] = pids_.emplace(task, static_cast<int>(pids_.size()));
    if (new_process)
      events_.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", process->second},
                         {"args", {{"name", task}}}});
    auto [thread, new_thread] = tids_.emplace(std::make_pair(s.device, s.thread), static_cast<int>(tids_.size()));
    if (new_thread)
      events_.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", process->second}, {"tid", thread->second},
                         {"args", {{"name", StrCat(device, " thread ", s.thread)}}}});
    return {process->second, thread->second};
  }

 private:
  Json& events_;
  std::map<std::string, int> pids_;                      // task -> pid
  std::map<std::pair<std::string, int>, int> tids_;      // (device, thread) -> tid
};

// A flow arrow (Chrome's "s"/"f" events) from each _Send to the _Recv of the
// same transfer: it starts inside the send and ends where the receive ended.
void AddTransferArrows(const RunMetadata& metadata, Tracks& tracks, Json& events) {
  std::map<std::string, const NodeExecStats*> sends;
  for (const NodeExecStats& s : metadata.step_stats)
    if (s.op == "_Send" && !s.transfer.empty()) sends.emplace(s.transfer, &s);
  int64_t id = 0;
  for (const NodeExecStats& recv : metadata.step_stats) {
    if (recv.op != "_Recv" || recv.transfer.empty()) continue;
    auto send = sends.find(recv.transfer);
    if (send == sends.end()) continue;
    auto [send_pid, send_tid] = tracks.Of(*send->second);
    auto [recv_pid, recv_tid] = tracks.Of(recv);
    ++id;
    events.push_back({{"name", "transfer"}, {"cat", "transfer"}, {"ph", "s"}, {"id", id},
                      {"ts", send->second->start_ns / 1e3}, {"pid", send_pid}, {"tid", send_tid}});
    events.push_back({{"name", "transfer"}, {"cat", "transfer"}, {"ph", "f"}, {"bp", "e"}, {"id", id},
                      {"ts", std::max(recv.start_ns, recv.end_ns - 1) / 1e3}, {"pid", recv_pid},
                      {"tid", recv_tid}});
  }
}

}  // namespace

void WriteChromeTrace(const RunMetadata& metadata, const std::string& path) {
  Json events = Json::array();
  Tracks tracks(events);
  for (const NodeExecStats& s : metadata.step_stats) {
    auto [pid, tid] = tracks.Of(s);
    Json args = {{"op", s.op}, {"device", s.device}, {"outputs", s.outputs}, {"output_bytes", s.output_bytes}};
    if (!s.transfer.empty()) args["transfer"] = s.transfer;
    events.push_back({{"name", s.node}, {"cat", s.op}, {"ph", "X"}, {"ts", s.start_ns / 1e3},
                      {"dur", Duration(s) / 1e3}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}});
  }
  AddTransferArrows(metadata, tracks, events);
  Json doc{{"traceEvents", std::move(events)},
           {"displayTimeUnit", "ms"},
           {"otherData", {{"step_ns", metadata.step_ns}, {"peak_bytes", metadata.peak_bytes}}}};
  WriteFileAtomic(path, doc.dump(1) + "\n");
}

RunMetadata MeanOfSteps(const std::vector<RunMetadata>& steps) {
  RunMetadata mean;
  if (steps.empty()) return mean;
  std::map<std::string, size_t> index;  // node -> position in mean.step_stats
  std::vector<int64_t> total_ns, step_ns;
  for (const RunMetadata& step : steps) {
    step_ns.push_back(step.step_ns);
    mean.peak_bytes = std::max(mean.peak_bytes, step.peak_bytes);
    for (const NodeExecStats& s : step.step_stats) {
      auto [it, added] = index.emplace(s.node, mean.step_stats.size());
      if (added) {
        mean.step_stats.push_back(s);
        total_ns.push_back(0);
      }
      total_ns[it->second] += Duration(s);
    }
  }
  for (size_t i = 0; i < mean.step_stats.size(); ++i) {
    mean.step_stats[i].start_ns = 0;
    mean.step_stats[i].end_ns = total_ns[i] / static_cast<int64_t>(steps.size());
  }
  std::nth_element(step_ns.begin(), step_ns.begin() + step_ns.size() / 2, step_ns.end());
  mean.step_ns = step_ns[step_ns.size() / 2];
  return mean;
}

std::string TraceSummary(const RunMetadata& metadata, int top) {
  const auto& stats = metadata.step_stats;
  int64_t total = 0;
  for (const NodeExecStats& s : stats) total += Duration(s);
  std::string out = StrCat("step ", FormatDuration(metadata.step_ns), ", ", stats.size(),
                           " nodes, ", FormatDuration(total), " in kernels, peak memory ",
                           FormatBytes(metadata.peak_bytes), "\n");
  if (stats.empty()) return out;

  std::vector<const NodeExecStats*> slowest;
  for (const NodeExecStats& s : stats) slowest.push_back(&s);
  std::stable_sort(slowest.begin(), slowest.end(),
                   [](const auto* a, const auto* b) { return Duration(*a) > Duration(*b); });
  slowest.resize(std::min<size_t>(slowest.size(), std::max(top, 0)));
  std::vector<std::vector<std::string>> rows = {{"node", "op", "time", "share", "outputs"}};
  for (const NodeExecStats* s : slowest) {
    std::string outputs;
    for (const std::string& o : s->outputs) outputs += (outputs.empty() ? "" : " ") + o;
    rows.push_back(
        {s->node, s->op, FormatDuration(Duration(*s)), Percent(Duration(*s), total), outputs});
  }
  out += StrCat("\ntop ", slowest.size(), " nodes by time:\n");
  out += Table(rows, {false, false, true, true, false});

  struct OpTotal {
    int count = 0;
    int64_t ns = 0;
  };
  std::map<std::string, OpTotal> per_op;
  for (const NodeExecStats& s : stats) {
    per_op[s.op].count++;
    per_op[s.op].ns += Duration(s);
  }
  std::vector<std::pair<std::string, OpTotal>> ops(per_op.begin(), per_op.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  rows = {{"op", "count", "time", "share"}};
  for (const auto& [op, t] : ops)
    rows.push_back({op, std::to_string(t.count), FormatDuration(t.ns), Percent(t.ns, total)});
  out += "\ntime per op:\n" + Table(rows, {false, true, true, true});
  return out;
}

}  // namespace dflow

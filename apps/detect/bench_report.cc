// The bench report; see bench_report.h.
#include "apps/detect/bench_report.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "graph/file.h"
#include "graph/status.h"

namespace dflow::detect_app {
namespace {

// The value after "key:" on the first line of a /proc file that starts with it.
std::string ProcField(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

// A value as a CSV field: numbers as JSON writes them, text quoted when it
// holds a comma, a quote or a line break (RFC 4180), null as empty.
std::string CsvField(const nlohmann::ordered_json& value) {
  if (value.is_null()) return "";
  if (!value.is_string()) return value.dump();
  const std::string& text = value.get_ref<const std::string&>();
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string CsvLine(const nlohmann::ordered_json& report, bool header) {
  std::string line;
  for (const auto& [key, value] : report.items()) {
    if (!line.empty()) line += ",";
    line += header ? key : CsvField(value);
  }
  return line + "\n";
}

}  // namespace

nlohmann::ordered_json MachineInfo() {
  char host[256] = {};
  const bool named = gethostname(host, sizeof host - 1) == 0 && host[0] != '\0';
  const std::string cpu = ProcField("/proc/cpuinfo", "model name");
  const std::string memory = ProcField("/proc/meminfo", "MemTotal");  // "24576000 kB"
  nlohmann::ordered_json info;
  info["node_name"] = named ? std::string(host) : "unknown";
  info["cpu"] = cpu.empty() ? "unknown" : cpu;
  if (memory.empty())
    info["memory_gb"] = nullptr;
  else
    info["memory_gb"] = std::round(std::stod(memory) / (1024.0 * 1024.0) * 10) / 10;
  return info;
}

std::string BenchTable(const nlohmann::ordered_json& report) {
  std::ostringstream table;
  for (const auto& [key, value] : report.items()) {
    table << std::left << std::setw(26) << key;
    if (value.is_string())
      table << value.get<std::string>();
    else if (value.is_number_float())
      table << std::fixed << std::setprecision(value.get<double>() < 10 ? 3 : 1) << value.get<double>();
    else
      table << value.dump();
    table << "\n";
  }
  return table.str();
}

void AppendBenchCsv(const std::string& path, const nlohmann::ordered_json& report) {
  const std::string header = CsvLine(report, true);
  std::string text;
  if (std::filesystem::exists(path)) {
    text = ReadFileToString(path);
    const std::string first = text.substr(0, text.find('\n') + 1);
    if (first != header)
      Fail(Code::kInvalidArgument, "--csv ", path, " has another header than dflow-detect bench writes (",
           header.substr(0, header.size() - 1), "); give a new file");
    if (!text.empty() && text.back() != '\n') text += "\n";
  } else {
    text = header;
  }
  WriteFileAtomic(path, text + CsvLine(report, false));
}

}  // namespace dflow::detect_app

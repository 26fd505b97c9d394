// The report of one `dflow-detect bench` run (the model compression box's,
// Murabito 2022, Listing 3.1): the machine it ran on, a table for people,
// and one row of a CSV file that collects every run.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dflow::detect_app {

// node_name (host name), cpu (model name) and memory_gb (total RAM), read
// from the system; "unknown" where it does not say.
nlohmann::ordered_json MachineInfo();

// The report's fields as aligned "name  value" lines.
std::string BenchTable(const nlohmann::ordered_json& report);

// Appends the report as one row to `path`, created with a header row when
// missing; a file whose header differs is refused (it holds something
// else) rather than extended. Written atomically: a failed run adds nothing.
void AppendBenchCsv(const std::string& path, const nlohmann::ordered_json& report);

}  // namespace dflow::detect_app

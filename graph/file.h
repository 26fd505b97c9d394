// Whole-file reads and atomic writes for dflow's file formats (.npy, graph
// JSON, traces): errors name the path and the OS reason.
#pragma once

#include <string>
#include <string_view>

namespace dflow {

// The file's bytes; throws kNotFound when it cannot be opened or read.
std::string ReadFileToString(const std::string& path);
// Writes `bytes` to a temporary file beside `path`, then renames it over
// `path`, so a reader never sees a half-written file. Throws on failure.
void WriteFileAtomic(const std::string& path, std::string_view bytes);

}  // namespace dflow

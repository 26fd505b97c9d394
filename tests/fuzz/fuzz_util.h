// What dflow's fuzz targets share (see run_fuzz.sh). A parser given any bytes
// must return or throw dflow::Error with one of the codes it documents; any
// other exception (a library's std::out_of_range, nlohmann's type_error) or
// another code aborts, and libFuzzer reports the input.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unistd.h>

#include "graph/status.h"

namespace dflow::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

template <class Parse>
void ParsesOrRefuses(Parse&& parse, std::initializer_list<Code> allowed) {
  try {
    parse();
  } catch (const Error& e) {
    for (Code code : allowed)
      if (e.code() == code) return;
    std::fprintf(stderr, "unexpected error code: %s\n", e.what());
    std::abort();
  }
}

// A folder of this process's own under the working directory (run_fuzz.sh
// runs in its scratch folder), for parsers that read files by name.
inline const std::filesystem::path& ScratchDir() {
  static const std::filesystem::path dir = [] {
    auto path = std::filesystem::absolute("fuzz-files-" + std::to_string(getpid()));
    std::filesystem::create_directories(path);
    return path;
  }();
  return dir;
}

// Writes `bytes` to ScratchDir()/name (creating its folders) and returns the path.
inline std::string WriteScratchFile(const std::string& name, std::string_view bytes) {
  std::filesystem::path path = ScratchDir() / name;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path.string();
}

}  // namespace dflow::fuzz

#include "graph/file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "graph/status.h"

namespace dflow {

std::string ReadFileToString(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    Fail(Code::kInvalidArgument, "cannot read '", path, "': it is a directory");
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) Fail(Code::kNotFound, "cannot open '", path, "': ", std::strerror(errno));
  std::string bytes;
  char chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, file)) > 0) bytes.append(chunk, n);
  bool failed = std::ferror(file);
  int err = errno;
  std::fclose(file);
  if (failed) Fail(Code::kDataLoss, "cannot read '", path, "': ", std::strerror(err));
  return bytes;
}

void WriteFileAtomic(const std::string& path, std::string_view bytes) {
  // The temporary name is unique per process, so concurrent writers of the
  // same path never interleave; the last rename wins.
  std::string temp = StrCat(path, ".tmp.", ::getpid());
  std::FILE* file = std::fopen(temp.c_str(), "wb");
  if (!file) Fail(Code::kNotFound, "cannot write '", path, "': ", std::strerror(errno));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  int err = errno;
  ok = (std::fclose(file) == 0) && ok;
  if (ok && std::rename(temp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    std::remove(temp.c_str());
    Fail(Code::kUnavailable, "cannot write '", path, "': ", std::strerror(err));
  }
}

}  // namespace dflow

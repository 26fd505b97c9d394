#include "graph/file.h"

#include <fcntl.h>
#include <sys/stat.h>
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

namespace {

[[noreturn]] void FailWrite(const std::string& path, const char* step, int err) {
  Fail(Code::kUnavailable, "cannot write '", path, "' (", step, "): ", std::strerror(err));
}

// write(2) may write less than asked or be interrupted; loop until done.
bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// The rename is an entry in the directory: only an fsync of the directory
// makes it survive a crash.
void SyncDirectoryOf(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) FailWrite(path, "open directory", errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) FailWrite(path, "fsync directory", err);
}

}  // namespace

void WriteFileDurable(const std::string& path, const std::vector<std::string_view>& pieces) {
  std::string temp = StrCat(path, ".tmp.", ::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) FailWrite(path, "create temp file", errno);
  const char* step = nullptr;
  for (std::string_view piece : pieces)
    if (!step && !WriteAll(fd, piece)) step = "write";
  if (!step && ::fsync(fd) != 0) step = "fsync";
  int err = errno;
  if (::close(fd) != 0 && !step) {
    step = "close";
    err = errno;
  }
  if (!step && std::rename(temp.c_str(), path.c_str()) != 0) {
    step = "rename";
    err = errno;
  }
  if (step) {
    std::remove(temp.c_str());
    FailWrite(path, step, err);
  }
  SyncDirectoryOf(path);
}

RandomAccessFile::RandomAccessFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) Fail(Code::kNotFound, "cannot open '", path, "': ", std::strerror(errno));
  struct stat info;
  if (::fstat(fd_, &info) != 0 || S_ISDIR(info.st_mode)) {
    ::close(fd_);
    Fail(Code::kInvalidArgument, "cannot read '", path, "': not a regular file");
  }
  size_ = static_cast<uint64_t>(info.st_size);
}

RandomAccessFile::~RandomAccessFile() { ::close(fd_); }

void RandomAccessFile::ReadAt(uint64_t offset, size_t n, void* out) const {
  auto* dst = static_cast<char*>(out);
  while (n > 0) {
    ssize_t got = ::pread(fd_, dst, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) Fail(Code::kDataLoss, "cannot read '", path_, "': ", std::strerror(errno));
    if (got == 0)
      Fail(Code::kDataLoss, "'", path_, "' is truncated: it ends at byte ", offset, " while ",
           n, " more bytes were expected");
    dst += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
}

}  // namespace dflow

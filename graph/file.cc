#include "graph/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "graph/allocator.h"
#include "graph/status.h"

namespace dflow {

namespace {

// Only regular files are read whole, and only up to the allocation limit:
// /dev/zero, a FIFO or a terminal would otherwise be read without end.
uint64_t CheckedReadableSize(int fd, const std::string& path) {
  struct stat info;
  if (::fstat(fd, &info) != 0)
    Fail(Code::kDataLoss, "cannot read '", path, "': ", std::strerror(errno));
  if (S_ISDIR(info.st_mode))
    Fail(Code::kInvalidArgument, "cannot read '", path, "': it is a directory");
  if (!S_ISREG(info.st_mode))
    Fail(Code::kInvalidArgument, "cannot read '", path, "': not a regular file");
  auto size = static_cast<uint64_t>(info.st_size);
  CheckAllocationSize(size, [&] { return StrCat("the contents of '", path, "'"); });
  return size;
}

// Reads `n` bytes; a file that shrank while being read is an error.
void ReadExactly(int fd, const std::string& path, char* out, uint64_t n) {
  uint64_t done = 0;
  while (done < n) {
    ssize_t got = ::read(fd, out + done, n - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) Fail(Code::kDataLoss, "cannot read '", path, "': ", std::strerror(errno));
    if (got == 0)
      Fail(Code::kDataLoss, "'", path, "' changed while it was read: it ends at byte ", done,
           " of ", n);
    done += static_cast<uint64_t>(got);
  }
}

}  // namespace

std::string ReadFileToString(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) Fail(Code::kNotFound, "cannot open '", path, "': ", std::strerror(errno));
  try {
    uint64_t size = CheckedReadableSize(fd, path);
    std::string bytes(size, '\0');
    ReadExactly(fd, path, bytes.data(), size);
    ::close(fd);
    return bytes;
  } catch (...) {
    ::close(fd);
    throw;
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

// Where an output named `path` goes. A temp file renamed over a device
// (/dev/null as root) or a pipe would replace it with a regular file, and
// renamed over a symlink would replace the link: so a character device or a
// FIFO is written through (the user asked for the bytes to go there), a
// symlink's target is replaced instead of the link, and any other existing
// non-regular file (a directory, a block device, a socket) is refused.
struct OutputTarget {
  std::string path;     // where the bytes go (a symlink's target)
  bool stream = false;  // a character device or FIFO: written in place
  bool append = false;  // a stream that is a regular file (/dev/stdout > file)
};

OutputTarget ResolveOutput(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return {path, false};  // a new file (or a dangling link: replaced)
    FailWrite(path, "stat", errno);
  }
  if (S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode)) return {path, true};
  // /dev/stdout redirected to a file: the bytes belong in that open file,
  // after what was printed, not in a new file renamed over its name.
  if (path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0) return {path, true, true};
  if (S_ISDIR(info.st_mode)) Fail(Code::kInvalidArgument, "cannot write '", path, "': it is a directory");
  if (!S_ISREG(info.st_mode))
    Fail(Code::kInvalidArgument, "cannot write '", path,
         "': it exists and is not a regular file, a character device or a pipe");
  std::error_code ec;
  std::filesystem::path target = std::filesystem::canonical(path, ec);
  return {ec ? path : target.string(), false};
}

// A device or pipe gets the bytes directly; every write and the close are
// checked, so /dev/full reports "No space left on device".
void WriteThrough(const std::string& path, const std::vector<std::string_view>& pieces, bool append) {
  // The stream may be this process's stdout: what it printed before comes first.
  std::cout.flush();
  std::fflush(nullptr);
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (append ? O_APPEND : 0));
  if (fd < 0) FailWrite(path, "open", errno);
  bool ok = true;
  for (std::string_view piece : pieces) ok = ok && WriteAll(fd, piece);
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) FailWrite(path, "write", err);
}

// The temp file + rename of WriteFileAtomic (durable: with fsyncs) for a
// regular `target` that `path` names.
void WriteAndRename(const std::string& path, const std::string& target,
                    const std::vector<std::string_view>& pieces, bool durable) {
  // The temporary name is unique per process, so concurrent writers of the
  // same path never interleave; the last rename wins.
  std::string temp = StrCat(target, ".tmp.", ::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  // WriteFileAtomic's callers take a missing folder for kNotFound, as a read would.
  if (fd < 0 && !durable)
    Fail(Code::kNotFound, "cannot write '", path, "' (create temp file): ", std::strerror(errno));
  if (fd < 0) FailWrite(path, "create temp file", errno);
  const char* step = nullptr;
  for (std::string_view piece : pieces)
    if (!step && !WriteAll(fd, piece)) step = "write";
  if (!step && durable && ::fsync(fd) != 0) step = "fsync";
  int err = errno;
  if (::close(fd) != 0 && !step) {
    step = "close";
    err = errno;
  }
  if (!step && std::rename(temp.c_str(), target.c_str()) != 0) {
    step = "rename";
    err = errno;
  }
  if (step) {
    std::remove(temp.c_str());
    FailWrite(path, step, err);
  }
  if (durable) SyncDirectoryOf(target);
}

void WriteOutput(const std::string& path, const std::vector<std::string_view>& pieces, bool durable) {
  OutputTarget target = ResolveOutput(path);
  if (target.stream) return WriteThrough(target.path, pieces, target.append);
  WriteAndRename(path, target.path, pieces, durable);
}

}  // namespace

void WriteFileAtomic(const std::string& path, std::string_view bytes) { WriteOutput(path, {bytes}, false); }

void WriteFileDurable(const std::string& path, const std::vector<std::string_view>& pieces) {
  WriteOutput(path, pieces, true);
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

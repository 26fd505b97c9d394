// Whole-file reads and atomic writes for dflow's file formats (.npy, graph
// JSON, traces, checkpoints): errors name the path and the OS reason.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dflow {

// The file's bytes; throws kNotFound when it cannot be opened, kDataLoss when
// it cannot be read, kInvalidArgument when it is not a regular file or is
// larger than MaxAllocationBytes() (graph/allocator.h).
std::string ReadFileToString(const std::string& path);
// Writes `bytes` to a temporary file beside `path`, then renames it over
// `path`, so a reader never sees a half-written file. Throws kUnavailable
// naming `path` when a write, the close or the rename fails. Not durable:
// after a power loss the rename may be lost.
// An existing `path` that is a character device or a FIFO (/dev/null, a
// pipe), or any path under /dev/ or /proc/ (/dev/stdout redirected to a
// file: appended to), is written through, not replaced, after flushing
// std::cout; a symlink's target is replaced, not the link; any other
// non-regular file (a directory, a block device, a socket) is refused with
// kInvalidArgument.
void WriteFileAtomic(const std::string& path, std::string_view bytes);

// Like WriteFileAtomic (devices and links included), and durable: the concatenated `pieces` go to
// "<path>.tmp.<pid>", which is fsynced before it is renamed over `path`, and
// the directory is fsynced after, so once this returns the new file survives
// a crash, and a process killed before the rename leaves `path` as it was
// (plus a stray temp file). Pieces avoid copying large tensors into one blob.
void WriteFileDurable(const std::string& path, const std::vector<std::string_view>& pieces);

// A file opened for reads at any offset (pread), closed on destruction.
class RandomAccessFile {
 public:
  // Throws kNotFound when `path` cannot be opened, kInvalidArgument for a directory.
  explicit RandomAccessFile(const std::string& path);
  ~RandomAccessFile();
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  // Reads exactly `n` bytes at `offset`; throws kDataLoss when the file ends first.
  void ReadAt(uint64_t offset, size_t n, void* out) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace dflow

#include "apps/jobs/upload.h"

#include <archive.h>
#include <archive_entry.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "graph/json.h"
#include "graph/status.h"

namespace dflow::jobs {
namespace {

namespace fs = std::filesystem;

using Archive = std::unique_ptr<archive, decltype(&archive_read_free)>;

// A member's name as a path under the destination, or a refusal.
fs::path MemberPath(const std::string& name) {
  fs::path path = fs::path(name).lexically_normal();
  bool ok = !name.empty() && !path.is_absolute() && !path.empty();
  for (const fs::path& part : path) ok = ok && part != "..";
  if (!ok)
    Fail(Code::kInvalidArgument, "the archive's member '", CutForMessage(name),
         "' is absolute or climbs out of the dataset's folder");
  return path;
}

void Unpack(archive* reader, const fs::path& into, const UnpackLimits& limits) {
  archive_entry* entry = nullptr;
  int64_t bytes = 0, entries = 0;
  int rc = 0;
  while ((rc = archive_read_next_header(reader, &entry)) == ARCHIVE_OK) {
    const std::string name = archive_entry_pathname(entry) ? archive_entry_pathname(entry) : "";
    fs::path target = into / MemberPath(name);
    if (++entries > limits.max_entries)
      Fail(Code::kInvalidArgument, "the archive holds more than ", limits.max_entries, " members");
    const auto type = archive_entry_filetype(entry);
    if (type == AE_IFDIR) {
      fs::create_directories(target);
      continue;
    }
    if (type != AE_IFREG)
      Fail(Code::kInvalidArgument, "the archive's member '", CutForMessage(name),
           "' is not a plain file or folder (links and devices are refused)");
    fs::create_directories(target.parent_path());
    std::ofstream out(target, std::ios::binary);
    const void* block = nullptr;
    size_t size = 0;
    la_int64_t offset = 0;
    while ((rc = archive_read_data_block(reader, &block, &size, &offset)) == ARCHIVE_OK) {
      bytes += static_cast<int64_t>(size);
      if (bytes > limits.max_bytes)
        Fail(Code::kInvalidArgument, "the archive unpacks to more than ", limits.max_bytes, " bytes");
      out.seekp(offset);
      out.write(static_cast<const char*>(block), static_cast<std::streamsize>(size));
    }
    if (rc != ARCHIVE_EOF)
      Fail(Code::kInvalidArgument, "the archive's member '", CutForMessage(name), "' is damaged: ",
           archive_error_string(reader));
    DFLOW_REQUIRE(out.good(), "cannot write ", target.string());
  }
  if (rc != ARCHIVE_EOF)
    Fail(Code::kInvalidArgument, "not a readable archive (tar, tar.gz, tar.xz or zip): ",
         archive_error_string(reader) ? archive_error_string(reader) : "unknown format");
  if (entries == 0) Fail(Code::kInvalidArgument, "the archive is empty");
}

}  // namespace

std::string UnpackDataset(const std::string& archive_path, const std::string& destination,
                          const UnpackLimits& limits) {
  DFLOW_REQUIRE(!fs::exists(destination), destination, " exists already");
  const fs::path staging = destination + ".unpacking";
  fs::remove_all(staging);
  fs::create_directories(staging);
  try {
    Archive reader(archive_read_new(), archive_read_free);
    archive_read_support_filter_all(reader.get());
    archive_read_support_format_tar(reader.get());
    archive_read_support_format_zip(reader.get());
    if (archive_read_open_filename(reader.get(), archive_path.c_str(), 1 << 16) != ARCHIVE_OK)
      Fail(Code::kInvalidArgument, "not a readable archive: ", archive_error_string(reader.get()));
    Unpack(reader.get(), staging, limits);
  } catch (...) {
    fs::remove_all(staging);
    throw;
  }
  fs::rename(staging, destination);
  std::vector<fs::path> top;
  for (const auto& entry : fs::directory_iterator(destination)) top.push_back(entry.path());
  if (top.size() == 1 && fs::is_directory(top.front())) return top.front().string();
  return destination;
}

}  // namespace dflow::jobs

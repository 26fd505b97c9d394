// Datasets uploaded as archives (.tar, .tar.gz, .tar.xz, .zip), unpacked
// with libarchive into the data root. Only plain files and folders with
// relative names that stay inside the destination are accepted: a link, a
// device, an absolute name or one that climbs out ("..") refuses the whole
// archive, naming the member, and nothing is left behind.
#pragma once

#include <cstdint>
#include <string>

namespace dflow::jobs {

struct UnpackLimits {
  int64_t max_bytes = int64_t{8} << 30;  // unpacked, all files together
  int64_t max_entries = 1'000'000;
};

// Unpacks `archive` into `destination` (which must not exist; made through a
// temporary sibling and renamed when complete). Returns the dataset's
// folder: `destination`, or its only subfolder when the archive held one
// top folder. kInvalidArgument names a bad archive or member.
std::string UnpackDataset(const std::string& archive, const std::string& destination,
                          const UnpackLimits& limits = {});

}  // namespace dflow::jobs

#include "graph/device.h"

#include <cctype>
#include <charconv>
#include <vector>

#include "graph/status.h"

namespace dflow {
namespace {

int ParseIndex(std::string_view digits, std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || value < 0)
    Fail(Code::kInvalidArgument, "malformed device name '", text, "': bad index '", digits, "'");
  return value;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string_view> SplitSlashes(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t slash = text.find('/', start);
    if (slash == std::string_view::npos) slash = text.size();
    if (slash > start) parts.push_back(text.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

}  // namespace

DeviceName DeviceName::Parse(std::string_view text) {
  DeviceName name;
  for (std::string_view part : SplitSlashes(text)) {
    size_t colon = part.find(':');
    std::string_view key = part.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? "" : part.substr(colon + 1);
    if (key == "job") {
      name.job = std::string(value);
    } else if (key == "replica") {
      name.replica = ParseIndex(value, text);
    } else if (key == "task") {
      name.task = ParseIndex(value, text);
    } else if (key == "device") {  // device:CPU:0 or device:CPU
      size_t second = value.find(':');
      name.type = Upper(value.substr(0, second));
      if (second != std::string_view::npos) name.index = ParseIndex(value.substr(second + 1), text);
    } else if (Upper(key) == "CPU" || Upper(key) == "GPU") {  // legacy "/cpu:0"
      name.type = Upper(key);
      if (colon != std::string_view::npos) name.index = ParseIndex(value, text);
    } else {
      Fail(Code::kInvalidArgument, "malformed device name '", text, "': unknown part '", part,
           "' (expected e.g. /job:worker/task:0/device:CPU:0)");
    }
  }
  return name;
}

std::string DeviceName::ToString() const {
  std::string s;
  if (!job.empty()) s += "/job:" + job;
  if (replica) s += StrCat("/replica:", *replica);
  if (task) s += StrCat("/task:", *task);
  if (!type.empty()) s += "/device:" + type + (index ? StrCat(":", *index) : ":*");
  return s;
}

bool DeviceName::Matches(const DeviceName& full) const {
  if (!job.empty() && job != full.job) return false;
  if (replica && replica != full.replica) return false;
  if (task && task != full.task) return false;
  if (!type.empty() && type != full.type) return false;
  if (index && index != full.index) return false;
  return true;
}

namespace {

class CpuDevice final : public Device {
 public:
  CpuDevice(std::string name, ThreadPool* pool) : Device(std::move(name), "CPU"), pool_(pool) {}
  Allocator* allocator() override { return CpuAllocator(); }
  ThreadPool* compute_pool() override { return pool_; }

 private:
  ThreadPool* pool_;
};

}  // namespace

std::unique_ptr<Device> NewCpuDevice(int index, ThreadPool* pool) {
  return std::make_unique<CpuDevice>(StrCat("/device:CPU:", index), pool);
}

std::unique_ptr<Device> NewCpuDevice(std::string name, ThreadPool* pool) {
  return std::make_unique<CpuDevice>(std::move(name), pool);
}

}  // namespace dflow

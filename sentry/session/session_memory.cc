#include "sentry/session/session_memory.h"

#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace sentry::session {
namespace {

// The server's own memory cgroup: (v1 "N:memory:/path", or v2 "0::/path").
std::pair<std::string, bool> OwnMemoryCgroup() {
  static const std::pair<std::string, bool> own = [] {
    std::ifstream f("/proc/self/cgroup");
    std::string line;
    std::pair<std::string, bool> v2;
    while (std::getline(f, line)) {
      std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
      if (parts.size() != 3) continue;
      std::string path = parts[2] == "/" ? "" : parts[2];
      for (absl::string_view c : absl::StrSplit(parts[1], ',')) {
        if (c == "memory") return std::make_pair(path, false);
      }
      if (parts[0] == "0" && parts[1].empty()) v2 = {path, true};
    }
    return v2;
  }();
  return own;
}

}  // namespace

std::optional<uint64_t> SessionMemoryBytes(pid_t supervisor_pid) {
  auto [own, v2] = OwnMemoryCgroup();
  std::string path =
      v2 ? absl::StrCat("/sys/fs/cgroup", own, "/sentry-", supervisor_pid, "/memory.current")
         : absl::StrCat("/sys/fs/cgroup/memory", own, "/sentry-", supervisor_pid,
                        "/memory.usage_in_bytes");
  std::ifstream f(path);
  std::string text;
  uint64_t v = 0;
  if (!std::getline(f, text) || !absl::SimpleAtoi(text, &v)) return std::nullopt;
  return v;
}

}  // namespace sentry::session

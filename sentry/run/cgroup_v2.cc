#include "sentry/run/cgroup_v2.h"

#include <linux/magic.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace sentry {
namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str().substr(0, 1 << 16);
}

}  // namespace

DelegatedCgroup FindDelegatedCgroup(const std::string& proc_self_cgroup, const std::string& mount) {
  DelegatedCgroup d;
  std::string path;
  bool found = false;
  for (absl::string_view line : absl::StrSplit(proc_self_cgroup, '\n', absl::SkipWhitespace())) {
    // The unified hierarchy's line is "0::/PATH" (cgroups(7)).
    if (absl::ConsumePrefix(&line, "0::")) {
      path = std::string(absl::StripAsciiWhitespace(line));
      found = true;
      break;
    }
  }
  if (!found || path.empty() || path[0] != '/' || path.find("/..") != std::string::npos) {
    d.why_not = "no cgroup v2 line in /proc/self/cgroup";
    return d;
  }
  std::string dir = path == "/" ? mount : mount + path;
  for (const char* f : {"", "/cgroup.procs", "/cgroup.subtree_control"}) {
    std::string p = dir + f;
    if (access(p.c_str(), W_OK) != 0) {
      d.why_not = absl::StrCat(p, " is not the caller's to write (no delegated subtree)");
      return d;
    }
  }
  std::string enabled = ReadText(dir + "/cgroup.subtree_control");
  for (absl::string_view c : absl::StrSplit(enabled, absl::ByAnyChar(" \n"), absl::SkipEmpty())) {
    if (c == "memory" || c == "pids" || c == "cpu") d.controllers.emplace_back(c);
  }
  if (d.controllers.empty()) {
    d.why_not = absl::StrCat(dir,
                             " is writable, but enables none of memory, pids, cpu for its "
                             "children (cgroup.subtree_control)");
    return d;
  }
  d.dir = dir;
  return d;
}

DelegatedCgroup FindOwnDelegatedCgroup() {
  struct statfs fs;
  if (statfs("/sys/fs/cgroup", &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
    DelegatedCgroup d;
    d.why_not = "/sys/fs/cgroup is not cgroup v2 (a v1 or hybrid host)";
    return d;
  }
  return FindDelegatedCgroup(ReadText("/proc/self/cgroup"), "/sys/fs/cgroup");
}

}  // namespace sentry

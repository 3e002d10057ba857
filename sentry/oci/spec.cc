#include "sentry/oci/spec.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sentry/oci/bundle.h"

namespace sentry::oci {

using nlohmann::ordered_json;

std::string FeaturesJson() {
  ordered_json j = {
      {"ociVersionMin", "1.0.0"},
      {"ociVersionMax", kOciSpecVersion},
      {"hooks", ordered_json::array()},
      {"mountOptions", {"bind", "rbind", "ro", "rw", "nosuid", "nodev", "noexec"}},
      {"linux",
       {{"namespaces", {"cgroup", "ipc", "mount", "network", "pid", "user", "uts"}},
        {"capabilities", ordered_json::array()},
        {"cgroup", {{"v1", true}, {"v2", false}, {"systemd", false}, {"systemdUser", false}}},
        {"seccomp", {{"enabled", false}}},
        {"apparmor", {{"enabled", false}}},
        {"selinux", {{"enabled", false}}}}},
      {"annotations",
       {{"dev.sentry.runtime", "sentry"},
        {"dev.sentry.annotations", absl::StrJoin(kSentryAnnotations, ", ")}}}};
  return j.dump(2);
}

std::string WriteDefaultSpec(const std::string& dir) {
  ordered_json j = {
      {"ociVersion", kOciSpecVersion},
      {"process",
       {{"terminal", true},
        {"user", {{"uid", 0}, {"gid", 0}}},
        {"args", {"sh"}},
        {"env",
         {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"}},
        {"cwd", "/"},
        {"rlimits", {{{"type", "RLIMIT_NOFILE"}, {"hard", 1024}, {"soft", 1024}}}},
        {"noNewPrivileges", true}}},
      {"root", {{"path", "rootfs"}, {"readonly", true}}},
      {"hostname", "sentry"},
      {"mounts",
       {{{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
        {{"destination", "/dev"},
         {"type", "tmpfs"},
         {"source", "tmpfs"},
         {"options", {"nosuid", "strictatime", "mode=755", "size=65536k"}}},
        {{"destination", "/dev/pts"}, {"type", "devpts"}, {"source", "devpts"}},
        {{"destination", "/dev/shm"}, {"type", "tmpfs"}, {"source", "shm"}},
        {{"destination", "/sys"}, {"type", "sysfs"}, {"source", "sysfs"}}}},
      {"linux",
       {{"resources", {{"memory", {{"limit", 1 << 30}}}, {"pids", {{"limit", 128}}}}},
        {"namespaces",
         {{{"type", "pid"}},
          {{"type", "network"}},
          {{"type", "ipc"}},
          {{"type", "uts"}},
          {{"type", "mount"}},
          {{"type", "cgroup"}}}}}}};
  std::string path = dir + "/config.json";
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return "File " + path + " exists. Remove it first";
    return absl::StrCat("cannot write ", path, ": ", std::strerror(errno));
  }
  std::string text = j.dump(2) + "\n";
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok ? "" : absl::StrCat("cannot write ", path);
}

}  // namespace sentry::oci

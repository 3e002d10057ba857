#include "sentry/run/denial_hint.h"

#include <cerrno>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace sentry {
namespace {

// The first string argument of a formatted call, unescaped; nullopt if there
// is none or it was cut short (the trace shortens long strings).
std::optional<std::string> FirstPath(const std::string& call, bool* at_cwd) {
  size_t open = call.find('"');
  if (open == std::string::npos) return std::nullopt;
  // A path after a dirfd other than AT_FDCWD is relative to a directory this
  // cannot name.
  size_t paren = call.find('(');
  std::string before = paren == std::string::npos ? "" : call.substr(paren + 1, open - paren - 1);
  *at_cwd = before.empty() || absl::StartsWith(before, "AT_FDCWD");
  std::string out;
  for (size_t i = open + 1; i < call.size(); ++i) {
    char c = call[i];
    if (c == '"') {
      if (call.compare(i + 1, 3, "...") == 0) return std::nullopt;
      return out;
    }
    if (c == '\\') {
      if (++i >= call.size()) return std::nullopt;
      char e = call[i];
      if (e != '"' && e != '\\') return std::nullopt;  // an odd byte: leave it
      c = e;
    }
    out.push_back(c);
  }
  return std::nullopt;
}

bool Under(const std::string& path, const std::string& dir) {
  if (dir.empty()) return false;
  if (dir == "/") return true;
  return path == dir || (absl::StartsWith(path, dir) && path[dir.size()] == '/');
}

// Whether the call would change the file system (else it reads or looks).
bool Writes(const std::string& syscall, const std::string& call) {
  if (syscall == "open" || syscall == "openat" || syscall == "openat2" || syscall == "creat") {
    return syscall == "creat" || call.find("O_WRONLY") != std::string::npos ||
           call.find("O_RDWR") != std::string::npos || call.find("O_CREAT") != std::string::npos ||
           call.find("O_TRUNC") != std::string::npos;
  }
  static constexpr const char* kReads[] = {
      "stat",       "lstat",     "newfstatat", "statx",      "access",   "faccessat",
      "faccessat2", "readlink",  "readlinkat", "execve",     "execveat", "chdir",
      "getxattr",   "lgetxattr", "listxattr",  "llistxattr", "statfs"};
  for (const char* r : kReads) {
    if (syscall == r) return false;
  }
  return true;
}

}  // namespace

std::string FileDenialHint(const std::string& syscall, const std::string& call, int err,
                           const DenialPlace& place) {
  if (err != EACCES && err != EPERM && err != EROFS) return "";
  bool at_cwd = true;
  std::optional<std::string> raw = FirstPath(call, &at_cwd);
  if (!raw || raw->empty()) return "";
  std::string path = *raw;
  if (path[0] != '/') {
    if (!at_cwd || place.cwd.empty()) return "";
    path = absl::StrCat(place.cwd == "/" ? "" : place.cwd, "/", path);
  }
  bool writes = Writes(syscall, call);
  // The deepest mount holding the path decides.
  const BindMount* mount = nullptr;
  for (const BindMount& m : place.mounts) {
    if (Under(path, m.guest_path) && (!mount || m.guest_path.size() > mount->guest_path.size())) {
      mount = &m;
    }
  }
  if (mount) {
    if (err == EROFS && mount->mode == BindMount::Mode::kReadOnly) {
      return absl::StrCat(mount->guest_path, " is a read-only mount (-v ", mount->host_path, ":",
                          mount->guest_path, ":ro); mount it :rw to write to the host");
    }
    if (err == EACCES && !writes && mount->mode != BindMount::Mode::kReadWrite) {
      return absl::StrCat(
          "a -v mount without :rw is read as an unprivileged host user: this "
          "host file or directory (under ",
          mount->host_path, ") is not readable by others (chmod o+r)");
    }
    return "";
  }
  // Outside the mounts: only a write to the system's files has the old advice.
  if (!writes || Under(path, "/tmp") || Under(path, place.home) || Under(path, place.cwd) ||
      Under(path, "/proc") || Under(path, "/dev") || Under(path, "/sys")) {
    return "";
  }
  return "the sandbox's system files are read-only for this user; write under /tmp or the home "
         "directory";
}

}  // namespace sentry

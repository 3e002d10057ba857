#include "sentry/pool/warm_sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"

namespace sentry {
namespace {

// The pid in "sentry-warm-PID-XXXXXX", or 0 (a name of another shape).
pid_t PidInName(std::string_view name) {
  name.remove_prefix(std::string_view(kWarmDirPrefix).size());
  size_t dash = name.find('-');
  int pid = 0;
  if (dash == std::string_view::npos ||
      !absl::SimpleAtoi(absl::string_view(name.data(), dash), &pid))
    return 0;
  return pid > 0 ? pid : 0;
}

bool Stale(int dir_fd, std::string_view name) {
  UniqueFd lock(openat(dir_fd, "lock", O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (lock) return flock(lock.get(), LOCK_EX | LOCK_NB) == 0;
  pid_t pid = PidInName(name);
  return pid > 0 && kill(pid, 0) < 0 && errno == ESRCH;
}

// Empties the directory (a pool's: files and a socket, no subdirectory) and
// removes it.
void Remove(int parent_fd, const char* name, int dir_fd) {
  int dup_fd = dup(dir_fd);
  DIR* d = dup_fd >= 0 ? fdopendir(dup_fd) : nullptr;
  if (d) {
    while (dirent* e = readdir(d)) {
      if (std::string_view(e->d_name) == "." || std::string_view(e->d_name) == "..") continue;
      unlinkat(dir_fd, e->d_name, 0);
    }
    closedir(d);
  }
  unlinkat(parent_fd, name, AT_REMOVEDIR);
}

}  // namespace

std::string WarmDirParent() {
  // "/sentry-warm-PID-XXXXXX/pool.sock" takes at most 42 bytes of the 108.
  constexpr size_t kMaxParent = 64;
  const char* tmp = getenv("TMPDIR");
  struct stat st;
  if (tmp && tmp[0] == '/' && strlen(tmp) <= kMaxParent && stat(tmp, &st) == 0 &&
      S_ISDIR(st.st_mode))
    return tmp;
  return "/tmp";
}

int SweepStaleWarmDirs(const std::string& dir) {
  UniqueFd parent(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent) return 0;
  int dup_fd = dup(parent.get());
  DIR* d = dup_fd >= 0 ? fdopendir(dup_fd) : nullptr;
  if (!d) return 0;
  int removed = 0;
  while (dirent* e = readdir(d)) {
    if (!absl::StartsWith(e->d_name, kWarmDirPrefix)) continue;
    UniqueFd fd(openat(parent.get(), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    if (!fd || fstat(fd.get(), &st) < 0 || st.st_uid != geteuid()) continue;
    if (!Stale(fd.get(), e->d_name)) continue;
    Remove(parent.get(), e->d_name, fd.get());
    ++removed;
  }
  closedir(d);
  return removed;
}

UniqueFd LockWarmDir(const std::string& dir) {
  UniqueFd fd(open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd || flock(fd.get(), LOCK_EX | LOCK_NB) < 0) return UniqueFd();
  return fd;
}

}  // namespace sentry

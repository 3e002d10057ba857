#include "sentry/run/seccomp_only.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sentry/base/status_macros.h"
#include "sentry/run/spawn.h"

namespace sentry {
namespace {

constexpr const char* kPrefix = "sentry-store-";
constexpr uid_t kFirstSeccompOnlyId = kHostIdBase + 0x10000;

int RemoveEntry(const char* path, const struct stat*, int type, FTW*) {
  if (type == FTW_DP) {
    rmdir(path);
  } else {
    unlink(path);
  }
  return 0;  // go on: remove what can be removed
}

// A store's tmpfs, if it has one, goes first (lazily: a guest fd may still
// hold it), then whatever is left in the directory, then the directory.
void RemoveTree(const std::string& path) {
  umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
  nftw(path.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
}

// Whether process pid still runs (a zombie has ended: only its exit status is left).
bool Running(pid_t pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(stat, line)) return false;
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

// Where a store may be made, in order of preference (a tmpfs first).
std::array<const char*, 4> StoreParents() {
  return {"/dev/shm", getenv("TMPDIR"), "/tmp", "/var/tmp"};
}

bool Usable(const char* dir) {
  struct statvfs sv;
  return dir && dir[0] == '/' && access(dir, W_OK | X_OK) == 0 && statvfs(dir, &sv) == 0 &&
         !(sv.f_flag & ST_NOEXEC) && !(sv.f_flag & ST_RDONLY);
}

// The body of KillEveryProcessOf's child: raw syscalls only (it shares the
// sentry's memory), not instrumented (it runs on a stack of its own).
__attribute__((no_sanitize("address", "undefined"))) int KillAsUid(void* arg) {
  auto uid = static_cast<uid_t>(reinterpret_cast<uintptr_t>(arg));
  if (syscall(SYS_setresgid, uid, uid, uid) < 0 || syscall(SYS_setresuid, uid, uid, uid) < 0) {
    syscall(SYS_exit, 2);
  }
  for (int pass = 0; pass < 2; ++pass) {
    if (syscall(SYS_kill, -1, SIGKILL) < 0 && errno == ESRCH) break;
  }
  syscall(SYS_exit, 0);
  return 0;
}

}  // namespace

uid_t SeccompOnlyGuestId(pid_t sentry_pid) {
  return kFirstSeccompOnlyId + static_cast<uid_t>(sentry_pid);
}

void KillEveryProcessOf(uid_t uid) {
  // kill(-1) signals every process the caller may signal but itself: with no
  // capability, those whose real or saved uid is the caller's. The kernel
  // walks the task list under its lock, and a fork that races with the walk
  // fails on the signal its parent got: one pass leaves no process running.
  // It is sent by a child process of its own, not a sentry thread with the
  // guest's ids: a guest may signal such a thread (tgkill), and SIGKILL there
  // would end the sentry. The child shares the sentry's memory (no page
  // tables to copy) on a stack of its own, and the caller waits until it has
  // exited. A guest may kill it too (before its pass): then it is tried again.
  std::vector<char> stack(64 << 10);
  for (int attempt = 0; attempt < 8; ++attempt) {
    pid_t killer = clone(KillAsUid, stack.data() + stack.size(), CLONE_VM | CLONE_VFORK | SIGCHLD,
                         reinterpret_cast<void*>(static_cast<uintptr_t>(uid)));
    if (killer < 0) return;
    int status = 0;
    while (waitpid(killer, &status, __WALL) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) return;  // (or reaped by another waiter: ECHILD)
  }
}

void ReapOrphans() {
  for (int i = 0; i < 1000; ++i) {
    pid_t pid = waitpid(-1, nullptr, __WALL | WNOHANG);
    if (pid < 0) return;  // ECHILD: none left
    if (pid == 0) usleep(1000);
  }
}

absl::StatusOr<HostStore> HostStore::Create(uid_t owner, uint64_t size_bytes) {
  for (const char* dir : StoreParents()) {
    if (!Usable(dir)) continue;
    std::string templ = absl::StrCat(dir, "/", kPrefix, getpid(), "-XXXXXX");
    if (!mkdtemp(templ.data())) continue;
    HostStore s;
    s.path_ = templ;
    if (chown(templ.c_str(), owner, owner) < 0 || chmod(templ.c_str(), 0700) < 0) {
      return ErrnoStatus(absl::StrCat("make the backing store ", templ));
    }
    std::string options =
        absl::StrCat("size=", size_bytes, ",mode=0700,uid=", owner, ",gid=", owner);
    s.capped_ =
        mount("sentry-store", templ.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) == 0;
    return s;
  }
  return absl::FailedPreconditionError(
      "no directory for the backing store: none of /dev/shm, $TMPDIR, /tmp and /var/tmp is "
      "writable and allows exec");
}

void HostStore::SweepStale() {
  for (const char* dir : StoreParents()) {
    if (!dir || dir[0] != '/') continue;
    DIR* d = opendir(dir);
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      if (std::strncmp(e->d_name, kPrefix, std::strlen(kPrefix)) != 0) continue;
      pid_t pid = static_cast<pid_t>(std::atol(e->d_name + std::strlen(kPrefix)));
      std::string path = absl::StrCat(dir, "/", e->d_name);
      struct stat st;
      // Only a store a sentry made (owned by one of its ids) whose sentry is gone.
      if (pid <= 0 || lstat(path.c_str(), &st) < 0 || !S_ISDIR(st.st_mode) ||
          st.st_uid < kFirstSeccompOnlyId || Running(pid)) {
        continue;
      }
      RemoveTree(path);
    }
    closedir(d);
  }
}

HostStore& HostStore::operator=(HostStore&& o) noexcept {
  if (this != &o) {
    Remove();
    path_ = std::move(o.path_);
    capped_ = o.capped_;
    o.path_.clear();
  }
  return *this;
}

UniqueFd HostStore::OpenDir() const {
  return UniqueFd(open(path_.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

void HostStore::Remove() {
  if (path_.empty()) return;
  RemoveTree(path_);
  path_.clear();
}

}  // namespace sentry

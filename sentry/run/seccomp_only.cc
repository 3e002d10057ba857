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

// Without root: the caller's own directory for its stores, made 0700 if
// missing, and used only if it is the caller's, 0700, and no symlink.
std::string PrivateStoreParent() {
  const char* runtime = getenv("XDG_RUNTIME_DIR");
  std::string dir;
  struct stat st;
  if (runtime && runtime[0] == '/' && stat(runtime, &st) == 0 && st.st_uid == geteuid()) {
    dir = absl::StrCat(runtime, "/sentry");
  } else {
    dir = absl::StrCat("/dev/shm/sentry-", geteuid());
  }
  mkdir(dir.c_str(), 0700);
  if (lstat(dir.c_str(), &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 077) != 0) {
    return "";
  }
  return dir;
}

// Where a store may be made, in order of preference (a tmpfs first).
std::vector<std::string> StoreParents() {
  if (geteuid() != 0) {
    std::string own = PrivateStoreParent();
    if (own.empty()) return {};
    return {own};
  }
  std::vector<std::string> out = {"/dev/shm"};
  if (const char* tmp = getenv("TMPDIR")) out.push_back(tmp);
  out.push_back("/tmp");
  out.push_back("/var/tmp");
  return out;
}

// The children of every thread of pid (/proc/PID/task/TID/children).
std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> out;
  std::string task_dir = absl::StrCat("/proc/", pid, "/task");
  DIR* d = opendir(task_dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream children(absl::StrCat(task_dir, "/", e->d_name, "/children"));
    pid_t child;
    while (children >> child) out.push_back(child);
  }
  closedir(d);
  return out;
}

pid_t ParentOf(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("PPid:", 0) == 0) return static_cast<pid_t>(std::atol(line.c_str() + 5));
  }
  return -1;
}

bool Usable(const std::string& dir) {
  struct statvfs sv;
  return !dir.empty() && dir[0] == '/' && access(dir.c_str(), W_OK | X_OK) == 0 &&
         statvfs(dir.c_str(), &sv) == 0 && !(sv.f_flag & ST_NOEXEC) && !(sv.f_flag & ST_RDONLY);
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

void KillTreeOf(pid_t root) {
  for (int pass = 0; pass < 1000; ++pass) {
    bool alive = false;
    std::vector<pid_t> parents = {root};
    while (!parents.empty()) {
      pid_t parent = parents.back();
      parents.pop_back();
      for (pid_t child : ChildrenOf(parent)) {
        parents.push_back(child);
        if (!Running(child)) continue;
        int fd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
        if (fd < 0) continue;
        // Still the child it was listed as (not a pid reused since).
        if (ParentOf(child) == parent) {
          alive = true;
          syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0);
        }
        close(fd);
      }
    }
    // A fork racing with its parent's SIGKILL fails; a child made before it
    // is listed at the next pass. None alive: none can be made any more.
    if (!alive) break;
    usleep(pass < 10 ? 100 : 1000);
  }
  kill(root, SIGKILL);
}

void ReapOrphans() {
  for (int i = 0; i < 1000; ++i) {
    pid_t pid = waitpid(-1, nullptr, __WALL | WNOHANG);
    if (pid < 0) return;  // ECHILD: none left
    if (pid == 0) usleep(1000);
  }
}

absl::StatusOr<HostStore> HostStore::Create(uid_t owner, gid_t group, uint64_t size_bytes) {
  for (const std::string& dir : StoreParents()) {
    if (!Usable(dir)) continue;
    std::string templ = absl::StrCat(dir, "/", kPrefix, getpid(), "-XXXXXX");
    if (!mkdtemp(templ.data())) continue;
    HostStore s;
    s.path_ = templ;
    if (chown(templ.c_str(), owner, group) < 0 || chmod(templ.c_str(), 0700) < 0) {
      return ErrnoStatus(absl::StrCat("make the backing store ", templ));
    }
    std::string options =
        absl::StrCat("size=", size_bytes, ",mode=0700,uid=", owner, ",gid=", group);
    s.capped_ = mount("sentry-store", templ.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOATIME,
                      options.c_str()) == 0;
    return s;
  }
  if (geteuid() != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the store wall: no private directory for the backing store ($XDG_RUNTIME_DIR/sentry or "
        "/dev/shm/sentry-",
        geteuid(), ", mode 0700, owned by this user, writable and allowing exec)"));
  }
  return absl::FailedPreconditionError(
      "no directory for the backing store: none of /dev/shm, $TMPDIR, /tmp and /var/tmp is "
      "writable and allows exec");
}

void HostStore::SweepStale() {
  for (const std::string& dir : StoreParents()) {
    if (dir.empty() || dir[0] != '/') continue;
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      if (std::strncmp(e->d_name, kPrefix, std::strlen(kPrefix)) != 0) continue;
      pid_t pid = static_cast<pid_t>(std::atol(e->d_name + std::strlen(kPrefix)));
      std::string path = absl::StrCat(dir, "/", e->d_name);
      struct stat st;
      // Only a store a sentry made (owned by one of its ids) whose sentry is gone.
      if (pid <= 0 || lstat(path.c_str(), &st) < 0 || !S_ISDIR(st.st_mode) ||
          (geteuid() == 0 ? st.st_uid < kFirstSeccompOnlyId : st.st_uid != geteuid()) ||
          Running(pid)) {
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

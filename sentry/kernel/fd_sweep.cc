#include "sentry/kernel/fd_sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "sentry/base/fs_identity.h"
#include "sentry/base/unique_fd.h"

namespace sentry {
namespace {

// Whether tid's fd table is one already read (threads made with CLONE_FILES).
bool SharesFiles(pid_t tid, const std::vector<pid_t>& read) {
  for (pid_t other : read) {
    if (syscall(SYS_kcmp, tid, other, KCMP_FILES, 0, 0) == 0) return true;
  }
  return false;
}

// Appends what tid's fd table holds; false if it could not all be read.
bool ReadFdTable(pid_t tid, std::vector<FdIdentity::Key>* keys) {
  std::string path = "/proc/" + std::to_string(tid) + "/fd";
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT || errno == ESRCH;  // gone: holds nothing
  DIR* dir = fdopendir(fd);
  if (!dir) {
    close(fd);
    return false;
  }
  bool ok = true;
  errno = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    struct stat st;
    if (fstatat(dirfd(dir), e->d_name, &st, 0) == 0) {
      keys->push_back(FdIdentity::KeyOf(st));
    } else if (errno != ENOENT) {  // ENOENT: closed meanwhile
      ok = false;
      break;
    }
    errno = 0;
  }
  // A task that died while it was read holds nothing any more.
  if (ok && errno != 0 && errno != ENOENT && errno != ESRCH) ok = false;
  closedir(dir);
  return ok;
}

}  // namespace

std::optional<std::vector<FdIdentity::Key>> GuestHeldKeys(const TaskTable& tasks) {
  std::vector<FdIdentity::Key> keys;
  SentryFsIdentity as_sentry;  // /proc/TID/fd asks for ptrace read access
  for (const auto& [tgid, process] : tasks.Processes()) {
    std::vector<pid_t> read;
    for (const Task* t : tasks.TasksOf(process.get())) {
      if (SharesFiles(t->tid, read)) continue;
      if (!ReadFdTable(t->tid, &keys)) return std::nullopt;
      read.push_back(t->tid);
    }
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

}  // namespace sentry

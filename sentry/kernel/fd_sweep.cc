#include "sentry/kernel/fd_sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "absl/strings/numbers.h"
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

// Passes what t's fd table holds to fn; false if it could not all be read.
bool ReadFdTable(const Task& t, GuestProcOpener& opener,
                 const std::function<void(const struct stat&)>& fn) {
  UniqueFd fd = opener.Open(t.tid, "fd", O_DIRECTORY);
  if (!fd) return errno == ENOENT || errno == ESRCH;  // gone: holds nothing
  DIR* dir = fdopendir(fd.get());
  if (!dir) return false;
  fd.Release();
  bool ok = true;
  errno = 0;
  while (dirent* e = readdir(dir)) {
    int n;
    if (!absl::SimpleAtoi(e->d_name, &n)) continue;
    UniqueFd copy = GuestFdCopy(t.pidfd.get(), n);
    struct stat st;
    if (copy && fstat(copy.get(), &st) == 0) {
      fn(st);
    } else if (errno == ESRCH) {  // the task has gone: holds nothing
      break;
    } else if (errno != EBADF) {  // EBADF: closed meanwhile
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

bool ForEachGuestFile(const TaskTable& tasks, GuestProcOpener& opener,
                      const std::function<void(const struct stat&)>& fn) {
  for (const auto& [tgid, process] : tasks.Processes()) {
    std::vector<pid_t> read;
    for (const Task* t : tasks.TasksOf(process.get())) {
      if (SharesFiles(t->tid, read)) continue;
      if (!ReadFdTable(*t, opener, fn)) return false;
      read.push_back(t->tid);
    }
  }
  return true;
}

std::optional<std::vector<FdIdentity::Key>> GuestHeldKeys(const TaskTable& tasks,
                                                          GuestProcOpener& opener) {
  std::vector<FdIdentity::Key> keys;
  if (!ForEachGuestFile(tasks, opener, [&keys](const struct stat& st) {
        keys.push_back(FdIdentity::KeyOf(st));
      })) {
    return std::nullopt;
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

std::set<ino_t> GuestSocketInodes(const TaskTable& tasks, GuestProcOpener& opener) {
  std::set<ino_t> out;
  ForEachGuestFile(tasks, opener, [&out](const struct stat& st) {
    if (S_ISSOCK(st.st_mode)) out.insert(st.st_ino);
  });
  return out;
}

}  // namespace sentry

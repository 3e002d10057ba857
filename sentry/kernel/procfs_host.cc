// Reading a guest process's own host /proc files (procfs_internal.h).
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <functional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sentry/base/fs_identity.h"
#include "sentry/kernel/procfs_internal.h"

namespace sentry::procfs {

uint64_t InoFor(const std::string& key) {
  return (std::hash<std::string>{}(key)&0xffffffffull) | (1ull << 34);
}

std::string ReadAllFd(int fd) {
  std::string out;
  char buf[1 << 14];
  while (out.size() < kMaxProcText) {
    ssize_t n = read(fd, buf, std::min(sizeof(buf), kMaxProcText - out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Opened as the sentry itself: a root guest's fd/ and environ are closed to
// the unprivileged fsuid of the notification thread.
UniqueFd OpenHostProcDir(Kernel& k, const Process& p) {
  for (const Task* t : k.tasks().TasksOf(&p)) {
    UniqueFd dir;
    {
      SentryFsIdentity as_sentry;
      dir = UniqueFd(open(absl::StrCat("/proc/", p.tgid).c_str(),
                          O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
    if (!dir || syscall(SYS_pidfd_send_signal, t->pidfd.get(), 0, nullptr, 0) < 0) return {};
    return dir;
  }
  return {};
}

std::string HostProcFile(Kernel& k, const Process& p, const char* file) {
  UniqueFd dir = OpenHostProcDir(k, p);
  if (!dir) return "";
  UniqueFd f = k.proc_opener().OpenAt(dir.get(), file);
  return f ? ReadAllFd(f.get()) : "";
}

UniqueFd GuestFdOf(Kernel& k, const Process& p, int fd) {
  const Task* t = LeaderOf(k, p);
  if (!t) {
    std::vector<const Task*> tasks = k.tasks().TasksOf(&p);
    if (tasks.empty()) return {};
    t = tasks.front();
  }
  return GuestFdCopy(t->pidfd.get(), fd);
}

std::string MapHostPid(Kernel& k, const std::string& host) {
  int h = 0;
  if (!absl::SimpleAtoi(host, &h) || h == 0) return "0";
  if (h == k.init_host_pid) return "1";
  return std::to_string(k.tasks().NsPidOfHost(h));
}

const Task* LeaderOf(Kernel& k, const Process& p) {
  for (const Task* t : k.tasks().TasksOf(&p))
    if (t->tid == p.tgid) return t;
  return nullptr;
}

}  // namespace sentry::procfs

#include "sentry/oci/monitor.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace sentry::oci {
namespace {

// The monitor keeps fds 0-2 (the container's stdio, as the engine gave
// them) and its own; nothing else of the engine's stays open in it.
void CloseOthers(const std::set<int>& keep) {
  std::vector<int> open_fds;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      int fd;
      if (absl::SimpleAtoi(e->d_name, &fd) && fd > 2 && fd != dirfd(d)) open_fds.push_back(fd);
    }
    closedir(d);
  }
  for (int fd : open_fds) {
    if (!keep.count(fd)) close(fd);
  }
}

int ReadCommand(int fifo) {
  char c;
  while (true) {
    ssize_t n = read(fifo, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 125;
    if (c == 's') return 0;
    if (c != 'k') continue;
    unsigned char signo = 0;
    while ((n = read(fifo, &signo, 1)) < 0 && errno == EINTR) {
    }
    return 128 + (n == 1 && signo > 0 && signo < 65 ? signo : SIGKILL);
  }
}

}  // namespace

void MonitorMain(MonitorArgs a) {
  if (a.detach) setsid();
  CloseOthers({a.ready_fd, a.error_fd, a.tty_fd});
  if (a.tty_fd >= 0) {
    // The terminal is the container's stdio (the guest gets it passed through).
    if (a.detach) ioctl(a.tty_fd, TIOCSCTTY, 0);
    for (int i = 0; i <= 2; ++i) dup2(a.tty_fd, i);
    close(a.tty_fd);
  }
  // Opened for reading and writing: `start` may open it for writing (without
  // blocking) as long as the monitor lives, and never after.
  int fifo = open(a.fifo_path.c_str(), O_RDWR | O_CLOEXEC);
  int saved_err = fcntl(2, F_DUPFD_CLOEXEC, 3);
  if (fifo < 0 || saved_err < 0) _exit(125);
  dup2(a.error_fd, 2);
  close(a.error_fd);
  int ready = a.ready_fd;
  a.run.before_go = [&](pid_t init, pid_t guest) -> int {
    dup2(saved_err, 2);
    close(saved_err);
    std::string line = absl::StrCat("R ", init, " ", guest, "\n");
    bool told =
        send(ready, line.data(), line.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(line.size());
    close(ready);
    if (!told) return 125;
    return ReadCommand(fifo);
  };
  int code = RunSandbox(a.run);
  std::fflush(nullptr);
  _exit(code);
}

}  // namespace sentry::oci

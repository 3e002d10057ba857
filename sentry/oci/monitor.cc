#include "sentry/oci/monitor.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sentry/net/netns_socket.h"

namespace sentry::oci {
namespace {

// The monitor keeps fds 0-2 (the container's stdio, as the engine gave
// them), the preserved ones and its own; nothing else of the engine's stays
// open in it.
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

UniqueFd UnixSocketAt(const std::string& path, bool listen_on) {
  // Through /proc/self/fd: a state directory's path may be longer than a
  // sockaddr_un holds (containerd's ids are 64 characters).
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  UniqueFd d(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!d) return UniqueFd();
  std::string name = absl::StrCat("/proc/self/fd/", d.get(), "/", path.substr(slash + 1));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name.size() >= sizeof(addr.sun_path)) return UniqueFd();
  std::memcpy(addr.sun_path, name.data(), name.size());
  UniqueFd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) return UniqueFd();
  if (!listen_on) {
    if (connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) return UniqueFd();
    return s;
  }
  // Root's alone from its first instant (no window with the umask's mode).
  mode_t old = umask(0177);
  int r = bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  umask(old);
  if (r < 0 || listen(s.get(), 8) < 0) return UniqueFd();
  fcntl(s.get(), F_SETFL, O_NONBLOCK);
  return s;
}

namespace {

// The monitor is the container's pid (the engine's pid file), so an engine
// that names this container's network namespace for another one names
// /proc/MONITOR/ns/net: a CRI pod's containers name the pause container's.
// The monitor therefore lives in the namespace its own config.json names (as
// runc's process would), or the container is not made: a pod's containers
// must never be handed the host's namespace. It is joined here, while the
// monitor has one thread; the guest still gets a namespace of its own.
bool JoinEngineNetns(const std::string& path, int error_fd) {
  if (path.empty()) return true;
  SysResult<UniqueFd> ns = net::OpenNetns(path);
  int err = ns.ok() ? (setns(ns->get(), CLONE_NEWNET) == 0 ? 0 : errno) : ns.error();
  if (err == 0) return true;
  std::string why = absl::StrCat("sentry: cannot join the network namespace ", path, " (",
                                 std::strerror(err), ")\n");
  (void)!write(error_fd, why.data(), why.size());
  return false;
}

}  // namespace

void MonitorMain(MonitorArgs a) {
  if (!JoinEngineNetns(a.run.outside_netns, a.error_fd)) _exit(125);
  if (a.detach) setsid();
  std::set<int> keep = {a.ready_fd, a.error_fd, a.tty_fd};
  // The engine's preserved fds go to the guest (the loader places them);
  // nothing the monitor runs itself inherits them.
  for (int fd : a.run.extra_fds) {
    keep.insert(fd);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  CloseOthers(keep);
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
  // Without it the container runs, and `exec` says it cannot reach it.
  UniqueFd exec_socket = UnixSocketAt(a.exec_socket_path, /*listen_on=*/true);
  a.run.exec_listen_fd = exec_socket.get();
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

#include "sentry/net/netns_socket.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>

namespace sentry::net {

SysResult<UniqueFd> BoundSocketInNetns(int netns_fd, int domain, int type, const sockaddr* addr,
                                       socklen_t len) {
  int fd = -1, err = 0;
  std::thread([&] {
    if (setns(netns_fd, CLONE_NEWNET) < 0) {
      err = errno;
      return;
    }
    fd = socket(domain, type | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = errno;
      return;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, addr, len) < 0) {
      err = errno;
      close(fd);
      fd = -1;
    }
  }).join();
  if (fd < 0) return Errno{err};
  return UniqueFd(fd);
}

SysResult<UniqueFd> SocketInNetns(int netns_fd, int domain, int type, int protocol) {
  if (netns_fd < 0) {
    int fd = socket(domain, type | SOCK_CLOEXEC, protocol);
    if (fd < 0) return Errno{errno};
    return UniqueFd(fd);
  }
  int fd = -1, err = 0;
  std::thread([&] {
    if (setns(netns_fd, CLONE_NEWNET) < 0) {
      err = errno;
      return;
    }
    fd = socket(domain, type | SOCK_CLOEXEC, protocol);
    if (fd < 0) err = errno;
  }).join();
  if (fd < 0) return Errno{err};
  return UniqueFd(fd);
}

SysResult<UniqueFd> OpenNetns(const std::string& path) {
  // Looked at through O_PATH first: opening a fifo or a device the path
  // might name could block or act; only an nsfs file is opened for real.
  UniqueFd where(open(path.c_str(), O_PATH | O_CLOEXEC));
  if (where.get() < 0) return Errno{errno};
  struct statfs fs;
  if (fstatfs(where.get(), &fs) < 0) return Errno{errno};
  if (fs.f_type != NSFS_MAGIC) return Errno{EINVAL};
  UniqueFd fd(open(("/proc/self/fd/" + std::to_string(where.get())).c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return Errno{errno};
  int type = ioctl(fd.get(), NS_GET_NSTYPE);
  if (type < 0 || type != CLONE_NEWNET) return Errno{EINVAL};
  return fd;
}

}  // namespace sentry::net

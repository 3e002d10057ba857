#include "sentry/net/netns_socket.h"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
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

}  // namespace sentry::net

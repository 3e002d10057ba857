#include "sentry/net/netns_socket.h"

#include <netinet/in.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <thread>

namespace sentry::net {

namespace {

// Runs fn on a short thread of its own that has joined netns_fd's namespace;
// fn's errno (0 for success), or setns's.
int InNetns(int netns_fd, const std::function<int()>& fn) {
  int err = 0;
  std::thread([&] { err = setns(netns_fd, CLONE_NEWNET) < 0 ? errno : fn(); }).join();
  return err;
}

SysResult<UniqueFd> BoundSocket(int domain, int type, const sockaddr* addr, socklen_t len) {
  UniqueFd fd(socket(domain, type | SOCK_CLOEXEC, 0));
  if (!fd) return Errno{errno};
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  // Should the namespace's loopback not be up yet, bound anyway: the socket
  // gets what is sent to the address once it is.
  if (domain == AF_INET) setsockopt(fd.get(), IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
  if (bind(fd.get(), addr, len) < 0) return Errno{errno};
  return fd;
}

}  // namespace

SysResult<UniqueFd> BoundSocketInNetns(int netns_fd, int domain, int type, const sockaddr* addr,
                                       socklen_t len) {
  SysResult<UniqueFd> out = Errno{EBADF};
  int err = InNetns(netns_fd, [&] {
    out = BoundSocket(domain, type, addr, len);
    return out.ok() ? 0 : out.error();
  });
  if (err != 0) return Errno{err};
  return out;
}

}  // namespace sentry::net

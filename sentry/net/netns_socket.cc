#include "sentry/net/netns_socket.h"

#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <thread>

namespace sentry::net {

namespace {

// Runs fn on a thread of its own that has joined netns_fd's namespace (and
// ends with it); fn's errno, or setns's.
int InNetns(int netns_fd, const std::function<int()>& fn) {
  int err = 0;
  std::thread([&] { err = setns(netns_fd, CLONE_NEWNET) < 0 ? errno : fn(); }).join();
  return err;
}

}  // namespace

SysResult<UniqueFd> BoundSocketInNetns(int netns_fd, int domain, int type, const sockaddr* addr,
                                       socklen_t len) {
  int fd = -1;
  int err = InNetns(netns_fd, [&] {
    fd = socket(domain, type | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    // The sandbox's loopback may not be up yet (it is brought up while the
    // sentry starts this): bound anyway, the socket gets what is sent to
    // the address once it is.
    if (domain == AF_INET) setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
    if (bind(fd, addr, len) < 0) {
      int e = errno;
      close(fd);
      fd = -1;
      return e;
    }
    return 0;
  });
  if (fd < 0) return Errno{err};
  return UniqueFd(fd);
}

SysStatus BringUpLoopbackInNetns(int netns_fd) {
  int err = InNetns(netns_fd, [] {
    UniqueFd s(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!s) return errno;
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    if (ioctl(s.get(), SIOCGIFFLAGS, &ifr) < 0) return errno;
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    return ioctl(s.get(), SIOCSIFFLAGS, &ifr) < 0 ? errno : 0;
  });
  if (err != 0) return Errno{err};
  return {};
}

}  // namespace sentry::net

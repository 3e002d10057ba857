#include "sentry/net/netns_socket.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

namespace sentry::net {
namespace {

// Without root the sentry has no CAP_SYS_ADMIN in its own user namespace,
// which setns(CLONE_NEWNET) asks for besides the one over the target's. A
// forked child (single-threaded, as setns(CLONE_NEWUSER) needs) first joins
// the user namespace that owns the network namespace (the sandbox's, whose
// owner is this uid: the kernel grants its owner every capability there),
// then the network namespace, makes the socket with make() and sends it back
// over a socketpair. The child allocates nothing (a fork of a threaded
// process) and the socket is the answer, so no reaper of the sentry's that
// takes its status first can lose it.
template <typename Make>
SysResult<UniqueFd> InNetnsChild(int netns_fd, Make make) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) return Errno{errno};
  UniqueFd mine(pair[0]), theirs(pair[1]);
  pid_t pid = fork();
  if (pid < 0) return Errno{errno};
  if (pid == 0) {
    int err = 0, fd = -1;
    int userns = ioctl(netns_fd, NS_GET_USERNS);
    if (userns < 0 || setns(userns, CLONE_NEWUSER) < 0 || setns(netns_fd, CLONE_NEWNET) < 0) {
      err = errno;
    } else {
      fd = make(&err);
    }
    char control[CMSG_SPACE(sizeof(int))] = {};
    iovec iov{&err, sizeof(err)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (fd >= 0) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    (void)!sendmsg(pair[1], &msg, 0);
    _exit(0);
  }
  theirs.Reset();
  int err = EIO;  // the child died before its answer
  char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{&err, sizeof(err)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  while ((n = recvmsg(mine.get(), &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  int fd = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); n > 0 && c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
    }
  }
  if (fd >= 0) return UniqueFd(fd);
  return Errno{n == sizeof(err) && err != 0 ? err : EIO};
}

}  // namespace

SysResult<UniqueFd> BoundSocketInNetns(int netns_fd, int domain, int type, const sockaddr* addr,
                                       socklen_t len) {
  if (geteuid() != 0) {
    return InNetnsChild(netns_fd, [&](int* err) {
      int fd = socket(domain, type | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        *err = errno;
        return -1;
      }
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (bind(fd, addr, len) < 0) {
        *err = errno;
        return -1;
      }
      return fd;
    });
  }
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
  if (geteuid() != 0) {
    return InNetnsChild(netns_fd, [&](int* err) {
      int fd = socket(domain, type | SOCK_CLOEXEC, protocol);
      if (fd < 0) *err = errno;
      return fd;
    });
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

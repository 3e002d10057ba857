// Fds passed over a unix socket (SCM_RIGHTS) with a small payload, in one
// message: the loader's cgroup files and DNS socket, a pool client's stdio,
// a session fork's hand-off sockets.
#ifndef SENTRY_BASE_FD_PASSING_H_
#define SENTRY_BASE_FD_PASSING_H_

#include <sys/types.h>

#include <cstddef>
#include <span>

#include "sentry/base/unique_fd.h"

namespace sentry {

// At most this many fds travel in one message (a session fork's prepare
// carries one hand-off socket per child: up to 100).
inline constexpr size_t kMaxPassedFds = 128;

// Sends len bytes and `fds` (none: an empty span) in one sendmsg, with
// MSG_NOSIGNAL, again on EINTR. Returns what sendmsg returned.
ssize_t SendWithFds(int sock, const void* data, size_t len, std::span<const int> fds);

struct Received {
  ssize_t bytes = -1;     // what recvmsg returned
  bool too_many = false;  // more fds came than `fds` holds (those were closed)
};

// Receives up to len bytes and the fds that come with them (recvmsg with
// MSG_CMSG_CLOEXEC | flags, again on EINTR), into `fds` in the order sent.
// Every fd that came is owned: those past fds.size() are closed.
Received ReceiveWithFds(int sock, void* data, size_t len, std::span<UniqueFd> fds, int flags = 0);

}  // namespace sentry

#endif  // SENTRY_BASE_FD_PASSING_H_

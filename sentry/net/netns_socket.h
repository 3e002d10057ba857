// Sockets the sentry makes inside the sandbox's network namespace (the DNS
// server's, the egress proxy's): a socket belongs to the namespace of the
// thread that creates it, so a short thread enters the namespace, makes the
// socket and ends; the sentry's own threads never leave theirs.
#ifndef SENTRY_NET_NETNS_SOCKET_H_
#define SENTRY_NET_NETNS_SOCKET_H_

#include <sys/socket.h>

#include <functional>

#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"

namespace sentry::net {

// Runs fn on a short thread of its own that has joined netns_fd's network
// namespace; returns fn's result (an errno, 0 for success), or setns's errno.
int InNetns(int netns_fd, const std::function<int()>& fn);

// In the calling thread's network namespace (inside InNetns): a socket bound
// to addr, and the loopback brought up (a new namespace's is down).
SysResult<UniqueFd> BoundSocket(int domain, int type, const sockaddr* addr, socklen_t len);
SysStatus BringUpLoopback();

// A socket in the network namespace of netns_fd, bound to addr.
SysResult<UniqueFd> BoundSocketInNetns(int netns_fd, int domain, int type, const sockaddr* addr,
                                       socklen_t len);

}  // namespace sentry::net

#endif  // SENTRY_NET_NETNS_SOCKET_H_

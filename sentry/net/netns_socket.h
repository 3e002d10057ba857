// Sockets the sentry makes inside the sandbox's network namespace (the DNS
// server's, the egress proxy's): a socket belongs to the namespace of the
// thread that creates it, so a short thread enters the namespace, makes the
// socket and ends; the sentry's own threads never leave theirs.
#ifndef SENTRY_NET_NETNS_SOCKET_H_
#define SENTRY_NET_NETNS_SOCKET_H_

#include <sys/socket.h>

#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"

namespace sentry::net {

// A socket in the network namespace of netns_fd, bound to addr.
SysResult<UniqueFd> BoundSocketInNetns(int netns_fd, int domain, int type, const sockaddr* addr,
                                       socklen_t len);

// The loopback of netns_fd's namespace, up (a new namespace's is down), from
// a short thread in it the same way.
SysStatus BringUpLoopbackInNetns(int netns_fd);

}  // namespace sentry::net

#endif  // SENTRY_NET_NETNS_SOCKET_H_

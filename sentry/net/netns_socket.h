// Sockets the sentry makes inside the sandbox's network namespace (the egress
// proxy's; the DNS server's comes from the loader, see loader.h): a socket
// belongs to the namespace of the thread that creates it, so a short thread
// enters the namespace, makes the socket and ends; the sentry's own threads
// never leave theirs.
#ifndef SENTRY_NET_NETNS_SOCKET_H_
#define SENTRY_NET_NETNS_SOCKET_H_

#include <sys/socket.h>

#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"

namespace sentry::net {

// A socket in the network namespace of netns_fd, bound to addr.
SysResult<UniqueFd> BoundSocketInNetns(int netns_fd, int domain, int type, const sockaddr* addr,
                                       socklen_t len);

}  // namespace sentry::net

#endif  // SENTRY_NET_NETNS_SOCKET_H_

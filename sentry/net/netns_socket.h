// Sockets the sentry makes inside another network namespace: the sandbox's
// (the egress proxy's listener; the DNS server's comes from the loader, see
// loader.h) or an engine's (an OCI container's, where the connections the
// policy allows leave, see egress.h). A socket belongs to the namespace of
// the thread that creates it, so a short thread enters the namespace, makes
// the socket and ends; the sentry's own threads never leave theirs.
#ifndef SENTRY_NET_NETNS_SOCKET_H_
#define SENTRY_NET_NETNS_SOCKET_H_

#include <sys/socket.h>

#include <string>

#include "sentry/base/sys_result.h"
#include "sentry/base/unique_fd.h"

namespace sentry::net {

// A socket in the network namespace of netns_fd, bound to addr.
SysResult<UniqueFd> BoundSocketInNetns(int netns_fd, int domain, int type, const sockaddr* addr,
                                       socklen_t len);

// A socket (SOCK_CLOEXEC added) in the network namespace of netns_fd, or in
// the sentry's own when netns_fd is -1.
SysResult<UniqueFd> SocketInNetns(int netns_fd, int domain, int type, int protocol);

// Opens path (/proc/PID/ns/net, /run/netns/NAME) and checks that it is a
// network namespace (NS_GET_NSTYPE): EINVAL if it is anything else.
SysResult<UniqueFd> OpenNetns(const std::string& path);

}  // namespace sentry::net

#endif  // SENTRY_NET_NETNS_SOCKET_H_

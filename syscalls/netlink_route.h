// NETLINK_ROUTE requests the sentry sends for the guest.
//
// A guest may make a NETLINK_ROUTE socket (the filter lets no other netlink
// protocol through, and none at all without a network namespace): it lives
// in the sandbox's network namespace, so what it enumerates is that
// namespace's own interfaces (`lo`, and nothing of the host), and the guest
// holds no capability, so the kernel refuses every change (RTM_NEW*/DEL*)
// whoever sends it: netlink checks the capability of the socket's opener as
// well as the sender's (__netlink_ns_capable).
//
// What reaches the sentry is a send that names an address (sendto, sendmsg,
// sendmmsg: glibc's getifaddrs and if_nameindex send their dumps so). The
// sentry sends those itself, from its copy of the socket, so it reads the
// request once and lets through only what interface enumeration needs: each
// message a well-formed RTM_GETLINK or RTM_GETADDR request, to the kernel
// (nl_pid 0, no multicast groups), at most kMaxNetlinkRequestBytes in all.
// Anything else is EOPNOTSUPP, listed with a hint in the run's result.
#ifndef SENTRY_SYSCALLS_NETLINK_ROUTE_H_
#define SENTRY_SYSCALLS_NETLINK_ROUTE_H_

#include <cstddef>

#include "sentry/base/sys_result.h"
#include "syscalls/socket_common.h"

namespace sentry::sys {

inline constexpr size_t kMaxNetlinkRequestBytes = 4096;

// Whether the sentry may send data to `to` on the netlink socket sock for the
// guest: EINVAL for a malformed message or address, EOPNOTSUPP for a request
// other than the two dumps, EMSGSIZE past the bound.
SysStatus CheckNetlinkRouteSend(SyscallContext& ctx, int sock, const char* data, size_t len,
                                const SockAddr& to);

// bind and connect of a netlink socket, done by the sentry on its copy: the
// kernel would check the capabilities of the sentry's thread, not the
// guest's, where the two differ. So what needs CAP_NET_ADMIN is refused here
// as the kernel refuses the guest: EPERM for a connect to multicast groups
// (a later plain send would reach them unchecked) and for a bind to the
// multicast-routing report groups (rtnetlink_bind).
SysStatus CheckNetlinkAddrOp(int sock, const SockAddr& a, bool is_connect);

}  // namespace sentry::sys

#endif  // SENTRY_SYSCALLS_NETLINK_ROUTE_H_

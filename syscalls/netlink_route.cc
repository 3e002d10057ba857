#include "syscalls/netlink_route.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace sentry::sys {

SysStatus CheckNetlinkRouteSend(SyscallContext& ctx, int sock, const char* data, size_t len,
                                const SockAddr& to) {
  int protocol = 0;
  socklen_t plen = sizeof(protocol);
  if (getsockopt(sock, SOL_SOCKET, SO_PROTOCOL, &protocol, &plen) < 0 ||
      protocol != NETLINK_ROUTE) {
    return Errno{EOPNOTSUPP};
  }
  // As netlink_sendmsg reads the address: shorter than sockaddr_nl or
  // another family is EINVAL.
  if (to.len < sizeof(sockaddr_nl) || to.addr.ss_family != AF_NETLINK) return Errno{EINVAL};
  sockaddr_nl nl;
  std::memcpy(&nl, &to.addr, sizeof(nl));
  if (nl.nl_pid != 0 || nl.nl_groups != 0) {
    ctx.hint = "the sandbox's netlink sockets talk to the kernel only (nl_pid 0, no groups)";
    return Errno{EOPNOTSUPP};
  }
  if (len > kMaxNetlinkRequestBytes) return Errno{EMSGSIZE};
  if (len < sizeof(nlmsghdr)) return Errno{EINVAL};
  for (size_t at = 0; at < len;) {
    nlmsghdr h;
    if (len - at < sizeof(h)) return Errno{EINVAL};
    std::memcpy(&h, data + at, sizeof(h));
    if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > len - at) return Errno{EINVAL};
    bool dump_request = h.nlmsg_type == RTM_GETLINK || h.nlmsg_type == RTM_GETADDR;
    if (!dump_request || !(h.nlmsg_flags & NLM_F_REQUEST)) {
      ctx.hint =
          "netlink in the sandbox answers interface enumeration only (RTM_GETLINK, "
          "RTM_GETADDR)";
      return Errno{EOPNOTSUPP};
    }
    at += NLMSG_ALIGN(h.nlmsg_len);
  }
  return {};
}

SysStatus CheckNetlinkAddrOp(int sock, const SockAddr& a, bool is_connect) {
  if (a.len < sizeof(sockaddr_nl) || a.addr.ss_family != AF_NETLINK) return {};  // the kernel's
  sockaddr_nl nl;
  std::memcpy(&nl, &a.addr, sizeof(nl));
  constexpr uint32_t kPrivilegedGroups =
      1u << (RTNLGRP_IPV4_MROUTE_R - 1) | 1u << (RTNLGRP_IPV6_MROUTE_R - 1);
  if (is_connect ? nl.nl_groups != 0 : (nl.nl_groups & kPrivilegedGroups) != 0) {
    return Errno{EPERM};
  }
  return {};
}

}  // namespace sentry::sys

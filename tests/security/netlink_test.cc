// NETLINK_ROUTE in the sandbox (syscalls/netlink_route.h): interface
// enumeration shows the sandbox's own network namespace and nothing of the
// host's; no other netlink protocol opens; a change is refused, on the
// sentry's path (a send with an address) and on the kernel's (a plain send:
// the guest holds no capability); malformed and oversized requests fail
// cleanly. Without namespaces no netlink socket opens at all.
#include <net/if.h>

#include <set>
#include <string>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"

namespace sentry::security {
namespace {

constexpr const char* kNetlinkAttacks = R"PY(
import socket, struct
NL = socket.AF_NETLINK
def nl(proto=socket.NETLINK_ROUTE):
    return socket.socket(NL, socket.SOCK_RAW, proto)
def msg(mtype, flags, body=b"", seq=1):
    return struct.pack("=IHHII", 16 + len(body), mtype, flags, seq, 0) + body
REQ, ACK, DUMP, CREATE, EXCL = 1, 4, 0x300, 0x400, 0x200
RTM_NEWADDR, RTM_GETLINK, RTM_NEWLINK, RTM_NEWROUTE = 20, 18, 16, 24
def newaddr():
    ip = socket.inet_aton("10.99.0.1")
    body = struct.pack("=BBBBI", socket.AF_INET, 24, 0, 0, 1)
    body += struct.pack("=HH", 8, 2) + ip + struct.pack("=HH", 8, 1) + ip
    return msg(RTM_NEWADDR, REQ | ACK | CREATE | EXCL, body)
def ack_errno(s):
    data = s.recv(65536)
    _, mtype, _, _, _ = struct.unpack("=IHHII", data[:16])
    return -struct.unpack("=i", data[16:20])[0] if mtype == 2 else "type %d" % mtype
for name, proto in [("audit", 9), ("uevent", 15), ("sock_diag", 4), ("netfilter", 12),
                    ("xfrm", 6), ("generic", 16), ("selinux", 7)]:
    t("open_" + name, lambda: nl(proto).fileno() >= 0)
t("nameindex", lambda: socket.if_nameindex())
def sentry_path_change():
    s = nl(); s.bind((0, 0))
    return s.sendto(newaddr(), (0, 0))
t("change_via_sendto", sentry_path_change)
def sendmsg_change():
    s = nl(); s.bind((0, 0))
    return s.sendmsg([msg(RTM_NEWLINK, REQ | ACK | CREATE)], [], 0, (0, 0))
t("change_via_sendmsg", sendmsg_change)
def kernel_path_change():
    s = nl(); s.bind((0, 0)); s.connect((0, 0))
    s.send(newaddr())
    return ack_errno(s)
t("change_via_send", kernel_path_change)
def route_change():
    s = nl(); s.bind((0, 0)); s.connect((0, 0))
    body = struct.pack("=BBBBBBBBI", socket.AF_INET, 0, 0, 0, 254, 3, 0, 1, 0)
    s.send(msg(RTM_NEWROUTE, REQ | ACK | CREATE, body))
    return ack_errno(s)
t("route_via_send", route_change)
def to_a_peer():
    s = nl(); s.bind((0, 0))
    return s.sendto(msg(RTM_GETLINK, REQ | DUMP, b"\0" * 16), (4242, 0))
t("to_peer", to_a_peer)
def to_groups():
    s = nl(); s.bind((0, 0))
    return s.sendto(msg(RTM_GETLINK, REQ | DUMP, b"\0" * 16), (0, 1))
t("to_groups", to_groups)
def truncated():
    s = nl(); s.bind((0, 0))
    return s.sendto(struct.pack("=IHHII", 400, RTM_GETLINK, REQ | DUMP, 1, 0), (0, 0))
t("truncated", truncated)
def oversized():
    s = nl(); s.bind((0, 0))
    return s.sendto(msg(RTM_GETLINK, REQ | DUMP, b"\0" * 8000), (0, 0))
t("oversized", oversized)
def not_a_request():
    s = nl(); s.bind((0, 0))
    return s.sendto(msg(RTM_GETLINK, DUMP, b"\0" * 16), (0, 0))
t("not_a_request", not_a_request)
def connect_groups():
    s = nl(); s.connect((0, 1))
    return "connected"
t("connect_groups", connect_groups)
def bind_mroute_reports():
    s = nl(); s.bind((0, 1 << 29))
    return "bound"
t("bind_mroute", bind_mroute_reports)
def bind_link_events():
    s = nl(); s.bind((0, 1))
    return "bound"
t("bind_link_events", bind_link_events)
t("after", lambda: sorted(a[1] for a in socket.if_nameindex()))
)PY";

std::set<std::string> HostInterfaces() {
  std::set<std::string> out;
  struct if_nameindex* ifs = if_nameindex();
  for (struct if_nameindex* i = ifs; i && i->if_index != 0; ++i) out.insert(i->if_name);
  if (ifs) if_freenameindex(ifs);
  return out;
}

TEST(Netlink, RouteShowsTheSandboxAndRefusesChanges) {
  for (bool root : {false, true}) {
    ProcessResult r = RunPy(kNetlinkAttacks,
                            root ? std::vector<std::string>{"--root"} : std::vector<std::string>{});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    Results res = ParseResults(r.out);
    for (const char* proto :
         {"audit", "uevent", "sock_diag", "netfilter", "xfrm", "generic", "selinux"}) {
      EXPECT_EQ(Code(res, std::string("open_") + proto), "EAFNOSUPPORT") << proto;
    }
    if (SeccompOnly()) {
      // The host's network namespace: no netlink socket at all.
      EXPECT_EQ(Code(res, "nameindex"), "EAFNOSUPPORT");
      EXPECT_EQ(Code(res, "change_via_send"), "EAFNOSUPPORT");
      continue;
    }
    EXPECT_EQ(Value(res, "nameindex"), "[(1, 'lo')]") << r.out;
    EXPECT_EQ(Code(res, "change_via_sendto"), "ENOTSUP");   // EOPNOTSUPP: errno 95 has both names
    EXPECT_EQ(Code(res, "change_via_sendmsg"), "ENOTSUP");  // EOPNOTSUPP: errno 95 has both names
    EXPECT_EQ(Value(res, "change_via_send"), "1") << "EPERM from the kernel: " << r.out;
    EXPECT_EQ(Value(res, "route_via_send"), "1") << r.out;
    EXPECT_EQ(Code(res, "to_peer"), "ENOTSUP");    // EOPNOTSUPP: errno 95 has both names
    EXPECT_EQ(Code(res, "to_groups"), "ENOTSUP");  // EOPNOTSUPP: errno 95 has both names
    EXPECT_EQ(Code(res, "truncated"), "EINVAL");
    EXPECT_EQ(Code(res, "oversized"), "EMSGSIZE");
    EXPECT_EQ(Code(res, "not_a_request"), "ENOTSUP");  // EOPNOTSUPP: errno 95 has both names
    EXPECT_EQ(Value(res, "after"), "['lo']");
    // What needs CAP_NET_ADMIN fails as it would for the guest itself,
    // although the sentry makes the call; listening to link events does not.
    EXPECT_EQ(Code(res, "connect_groups"), "EPERM");
    EXPECT_EQ(Code(res, "bind_mroute"), "EPERM");
    EXPECT_EQ(Value(res, "bind_link_events"), "'bound'");
    for (const std::string& host_if : HostInterfaces()) {
      if (host_if == "lo") continue;
      EXPECT_EQ(r.out.find("'" + host_if + "'"), std::string::npos) << host_if;
    }
  }
}

}  // namespace
}  // namespace sentry::security

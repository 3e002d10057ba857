// NETLINK_ROUTE interface enumeration (getifaddrs, if_nameindex): under
// sentry the sandbox's own network namespace answers (syscalls/
// netlink_route.h); `lo` is there natively and sandboxed alike.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

TEST(NetlinkRouteTest, GetifaddrsListsLoopback) {
  ifaddrs* list = nullptr;
  ASSERT_SYSCALL_SUCCEEDS(getifaddrs(&list));
  bool lo_v4 = false;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (std::string(i->ifa_name) != "lo" || !i->ifa_addr) continue;
    if (i->ifa_addr->sa_family == AF_INET) {
      auto* in = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
      lo_v4 = in->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
    }
  }
  freeifaddrs(list);
  EXPECT_TRUE(lo_v4);
}

TEST(NetlinkRouteTest, IfNameindexListsLoopback) {
  struct if_nameindex* ifs = if_nameindex();
  ASSERT_NE(ifs, nullptr) << strerror(errno);
  bool lo = false;
  for (struct if_nameindex* i = ifs; i->if_index != 0; ++i) lo |= std::string(i->if_name) == "lo";
  if_freenameindex(ifs);
  EXPECT_TRUE(lo);
}

// A dump sent with an address, as glibc sends it: the reply comes from the
// kernel (nl_pid 0), ends with NLMSG_DONE and names lo.
TEST(NetlinkRouteTest, LinkDumpEndsWithDone) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  ASSERT_SYSCALL_SUCCEEDS(fd);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  ASSERT_SYSCALL_SUCCEEDS(bind(fd, reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)));
  struct {
    nlmsghdr h;
    ifinfomsg i;
  } req{};
  req.h.nlmsg_len = sizeof(req);
  req.h.nlmsg_type = RTM_GETLINK;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.h.nlmsg_seq = 7;
  ASSERT_EQ(sendto(fd, &req, sizeof(req), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)),
            static_cast<ssize_t>(sizeof(req)))
      << strerror(errno);
  bool done = false, lo = false;
  char buf[32768];
  for (int rounds = 0; !done && rounds < 100; ++rounds) {
    sockaddr_nl from{};
    iovec iov{buf, sizeof(buf)};
    msghdr m{};
    m.msg_name = &from;
    m.msg_namelen = sizeof(from);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    ssize_t n = recvmsg(fd, &m, 0);
    ASSERT_GT(n, 0) << strerror(errno);
    EXPECT_EQ(from.nl_pid, 0u);
    for (nlmsghdr* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, static_cast<size_t>(n));
         h = NLMSG_NEXT(h, n)) {
      EXPECT_EQ(h->nlmsg_seq, 7u);
      if (h->nlmsg_type == NLMSG_DONE) done = true;
      if (h->nlmsg_type != RTM_NEWLINK) continue;
      auto* info = static_cast<ifinfomsg*>(NLMSG_DATA(h));
      int len = static_cast<int>(IFLA_PAYLOAD(h));
      for (rtattr* a = IFLA_RTA(info); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
        if (a->rta_type == IFLA_IFNAME && std::string(static_cast<char*>(RTA_DATA(a))) == "lo") {
          lo = true;
        }
      }
    }
  }
  EXPECT_TRUE(done);
  EXPECT_TRUE(lo);
  close(fd);
}

}  // namespace
}  // namespace sentry::conformance

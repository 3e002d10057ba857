// The network wall: the guest's only network is its own loopback. The host's
// loopback services, the host's addresses and the Internet are unreachable,
// and the socket families that reach the host's kernel networking are refused.
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"

namespace sentry::security {
namespace {

// The host's own non-loopback addresses (IPv4, and global IPv6).
std::vector<std::string> HostAddresses() {
  std::vector<std::string> out;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return out;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    char buf[INET6_ADDRSTRLEN];
    if (i->ifa_addr->sa_family == AF_INET) {
      auto* in = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
      if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
      inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
      out.push_back(buf);
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(i->ifa_addr);
      if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) || IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) {
        continue;
      }
      inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
      out.push_back(buf);
    }
  }
  freeifaddrs(ifs);
  return out;
}

TEST(NetworkWall, HostLoopbackHostAddressesAndInternetAreUnreachable) {
  // The test's real listeners: TCP and UDP on every IPv4 address, TCP on IPv6.
  int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  ASSERT_GE(tcp, 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(bind(tcp, reinterpret_cast<sockaddr*>(&any), sizeof(any)), 0);
  ASSERT_EQ(listen(tcp, 16), 0);
  socklen_t len = sizeof(any);
  getsockname(tcp, reinterpret_cast<sockaddr*>(&any), &len);
  int port = ntohs(any.sin_port);
  int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  bool have_udp = udp >= 0 && bind(udp, reinterpret_cast<sockaddr*>(&any), sizeof(any)) == 0;
  int tcp6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (tcp6 >= 0) {
    int one = 1;
    setsockopt(tcp6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    sockaddr_in6 any6{};
    any6.sin6_family = AF_INET6;
    any6.sin6_addr = in6addr_any;
    any6.sin6_port = htons(port);
    if (bind(tcp6, reinterpret_cast<sockaddr*>(&any6), sizeof(any6)) != 0 ||
        listen(tcp6, 16) != 0) {
      close(tcp6);
      tcp6 = -1;
    }
  }

  std::vector<std::string> addrs = HostAddresses();
  std::vector<std::string> args = {"net", std::to_string(port)};
  args.insert(args.end(), addrs.begin(), addrs.end());
  ProcessResult r = RunProbe(args, {}, 60);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  // 127.0.0.1 and ::1 are the sandbox's own loopback, where nothing listens.
  EXPECT_EQ(Code(res, "tcp_host_loopback"), "ECONNREFUSED");
  EXPECT_EQ(Code(res, "tcp6_host_loopback"), "ECONNREFUSED");
  std::string udp_lo = Code(res, "udp_host_loopback");
  EXPECT_TRUE(udp_lo == "OK" || udp_lo == "ECONNREFUSED") << udp_lo;
  for (const char* n : {"tcp_dns", "udp_dns", "tcp_metadata", "tcp6_dns", "sendto_dns"}) {
    EXPECT_EQ(Code(res, n), "ENETUNREACH") << n;
  }
  for (size_t i = 0; i < addrs.size(); ++i) {
    std::string n = "tcp_host_addr_" + std::to_string(i + 1);
    EXPECT_EQ(Code(res, n), "ENETUNREACH") << n << " " << addrs[i];
  }
  EXPECT_EQ(Code(res, "socket_packet"), "EAFNOSUPPORT");
  // NETLINK_ROUTE opens in the sandbox's own network namespace (see
  // netlink_test.cc: it shows only lo and changes nothing).
  EXPECT_EQ(Code(res, "socket_netlink_route"), "OK");

  // Nothing arrived at the host's listeners.
  EXPECT_LT(accept4(tcp, nullptr, nullptr, SOCK_CLOEXEC), 0) << "a guest connected to the host";
  EXPECT_EQ(errno, EAGAIN);
  if (tcp6 >= 0) {
    EXPECT_LT(accept4(tcp6, nullptr, nullptr, SOCK_CLOEXEC), 0) << "a guest connected (IPv6)";
    close(tcp6);
  }
  if (have_udp) {
    char buf[64];
    EXPECT_LT(recv(udp, buf, sizeof(buf), 0), 0) << "a guest datagram reached the host";
  }
  if (udp >= 0) close(udp);
  close(tcp);
}

// AF_UNIX sockets of the host: abstract names (containerd-shim's CVE-2020-15257
// class) live in the host's network namespace; pathname sockets in its mount
// namespace. Neither is reachable.
TEST(NetworkWall, HostUnixSocketsAreUnreachable) {
  TempDir dir("/tmp/sec-unix-");
  std::string token = RandomToken(12);
  auto bind_unix = [](int type, const std::string& name, bool abstract) {
    int s = socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path + (abstract ? 1 : 0), name.data(), name.size());
    socklen_t len = offsetof(sockaddr_un, sun_path) + name.size() + (abstract ? 1 : 0);
    EXPECT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), len), 0) << name;
    if (type == SOCK_STREAM) listen(s, 8);
    return s;
  };
  std::string stream_name = "sec-abs-stream-" + token, dgram_name = "sec-abs-dgram-" + token;
  std::string path = dir.path() + "/sock";
  int stream = bind_unix(SOCK_STREAM, stream_name, true);
  int dgram = bind_unix(SOCK_DGRAM, dgram_name, true);
  int pathsock = bind_unix(SOCK_DGRAM, path, false);
  ProcessResult r = RunProbe({"unix", stream_name, dgram_name, path});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Code(res, "abstract_stream"), "ECONNREFUSED");
  EXPECT_EQ(Code(res, "abstract_dgram_connect"), "ECONNREFUSED");
  EXPECT_EQ(Code(res, "abstract_dgram_sendto"), "ECONNREFUSED");
  EXPECT_EQ(Code(res, "path_stream"), "ENOENT");
  EXPECT_EQ(Code(res, "path_dgram_sendto"), "ENOENT");
  char buf[64];
  EXPECT_LT(accept4(stream, nullptr, nullptr, SOCK_CLOEXEC), 0) << "guest reached the host";
  EXPECT_LT(recv(dgram, buf, sizeof(buf), 0), 0) << "guest datagram reached the host";
  EXPECT_LT(recv(pathsock, buf, sizeof(buf), 0), 0) << "guest datagram reached the host";
  close(stream);
  close(dgram);
  close(pathsock);
}

// A service the guest starts on its loopback is its own, and the host cannot
// reach it either: the namespaces are separate in both directions.
TEST(NetworkWall, SandboxLoopbackIsPrivate) {
  ProcessResult r = RunPy(R"PY(
import socket
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
port = srv.getsockname()[1]
c = socket.socket(); c.connect(("127.0.0.1", port))
a, _ = srv.accept(); a.sendall(b"hello"); print("inside=" + c.recv(5).decode(), flush=True)
print("port=" + str(port), flush=True)
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(res["inside"], "hello");
}

// Unix socket names the guest binds are VFS names: the socket inode lives in
// the run's store and the name is made inside an empty chroot, so no name,
// however it climbs, lands on the host; the store's own names cannot be
// reached; and a symlink cannot point a bind elsewhere.
TEST(NetworkWall, UnixSocketNamesStayInTheSandbox) {
  std::string token = RandomToken(12);
  std::string host_target = "/tmp/sec-bind-" + token;
  ProcessResult r = RunPy("token = " + PyQuote(token) + R"PY(
import errno, os, socket, sys
def bind(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.bind(name); return "ok " + s.getsockname()
    except OSError as e: return errno.errorcode[e.errno]
os.chdir("/tmp")
print("climb=" + bind("../../../../../../tmp/sec-bind-" + token))
print("abs_climb=" + bind("/../../../tmp/sec-bind-" + token + "-abs"))
print("proc_root=" + bind("/proc/1/root/tmp/sec-bind-" + token + "-proc"))
os.symlink("/etc/sec-bind-" + token, "/tmp/link")
print("symlink=" + bind("/tmp/link"))
print("store=" + bind("/.sentry-store/x"))
c = socket.socket(socket.AF_UNIX)
for name in ["/.sentry-store/s1", "/proc/self/fd/0", "/proc/self/root/.sentry-store/s1"]:
    try: c.connect(name); print("connect=reached " + name)
    except OSError as e: print("connect_" + name.replace("/", "_") + "=" + errno.errorcode[e.errno])
)PY");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  // Inside, the names exist where the guest's own path walk puts them...
  EXPECT_EQ(res["climb"], "ok ../../../../../../tmp/sec-bind-" + token) << r.out;
  EXPECT_EQ(res["abs_climb"], "ok /../../../tmp/sec-bind-" + token + "-abs") << r.out;
  EXPECT_EQ(res["symlink"], "EADDRINUSE") << r.out;
  EXPECT_NE(res["store"].rfind("ok", 0), 0u) << r.out;
  EXPECT_EQ(res["connect__.sentry-store_s1"], "ENOENT") << r.out;
  EXPECT_NE(res["connect__proc_self_fd_0"], "") << r.out;
  EXPECT_EQ(r.out.find("connect=reached"), std::string::npos) << r.out;
  // ...and never on the host.
  for (const std::string& p :
       {host_target, host_target + "-abs", host_target + "-proc", "/etc/sec-bind-" + token}) {
    EXPECT_NE(access(p.c_str(), F_OK), 0) << p << " appeared on the host";
  }
}

}  // namespace
}  // namespace sentry::security

// Unix sockets bound to paths, loopback inet sockets, and sendto with an
// address: names, errors and signals as Linux gives them.
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

// Binds fd to 127.0.0.1 on a port the kernel picks; returns that address.
sockaddr_in BindLoopback(int fd) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_SYSCALL_SUCCEEDS(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)));
  socklen_t len = sizeof(a);
  EXPECT_SYSCALL_SUCCEEDS(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len));
  return a;
}

sockaddr_un UnixAddr(const std::string& path, socklen_t* len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.data(), std::min(path.size(), sizeof(a.sun_path)));
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  return a;
}

int BindUnix(int fd, const std::string& path) {
  socklen_t len;
  sockaddr_un a = UnixAddr(path, &len);
  return bind(fd, reinterpret_cast<sockaddr*>(&a), len);
}

int ConnectUnix(int fd, const std::string& path) {
  socklen_t len;
  sockaddr_un a = UnixAddr(path, &len);
  return connect(fd, reinterpret_cast<sockaddr*>(&a), len);
}

std::string SockName(int fd, bool peer = false) {
  sockaddr_un a{};
  socklen_t len = sizeof(a);
  int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
                : getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  if (rc < 0) return "error " + ErrnoName(errno);
  if (len <= offsetof(sockaddr_un, sun_path)) return "";
  return std::string(a.sun_path, strnlen(a.sun_path, len - offsetof(sockaddr_un, sun_path)));
}

TEST(UnixSocketTest, BindMakesASocketFileAndKeepsTheName) {
  ScratchDir dir;
  UmaskGuard mask(022);
  UniqueFd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(BindUnix(s.get(), dir.Path("s")));
  struct stat st = StatOrFail(dir.Path("s"));
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(st.st_size, 0);
  EXPECT_EQ(SockName(s.get()), dir.Path("s"));
}

TEST(UnixSocketTest, StreamConnectAcceptAndNames) {
  ScratchDir dir;
  UniqueFd srv(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(BindUnix(srv.get(), dir.Path("srv")));
  ASSERT_SYSCALL_SUCCEEDS(listen(srv.get(), 4));
  UniqueFd cli(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(ConnectUnix(cli.get(), dir.Path("srv")));
  EXPECT_EQ(SockName(cli.get(), true), dir.Path("srv"));
  EXPECT_EQ(SockName(cli.get()), "");
  UniqueFd conn(accept4(srv.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(conn.get());
  EXPECT_EQ(SockName(conn.get()), dir.Path("srv"));
  ASSERT_EQ(write(cli.get(), "ping", 4), 4);
  char buf[8] = {};
  EXPECT_EQ(read(conn.get(), buf, sizeof(buf)), 4);
  EXPECT_STREQ(buf, "ping");
}

TEST(UnixSocketTest, RelativeNameIsKeptAsGiven) {
  ScratchDir dir;
  CwdGuard cwd;
  ASSERT_SYSCALL_SUCCEEDS(chdir(dir.path().c_str()));
  ASSERT_SYSCALL_SUCCEEDS(mkdir("sub", 0700));
  UniqueFd s(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(BindUnix(s.get(), "sub/../sub/rel"));
  EXPECT_EQ(SockName(s.get()), "sub/../sub/rel");
  EXPECT_TRUE(S_ISSOCK(StatOrFail(dir.Path("sub/rel")).st_mode));
}

TEST(UnixSocketTest, ExistingNameIsAddressInUse) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("file"), ""));
  ASSERT_SYSCALL_SUCCEEDS(symlink("nowhere", dir.Path("dangling").c_str()));
  UniqueFd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_SYSCALL_FAILS_WITH(BindUnix(s.get(), dir.Path("file")), EADDRINUSE);
  EXPECT_SYSCALL_FAILS_WITH(BindUnix(s.get(), dir.Path("dangling")), EADDRINUSE);
  EXPECT_SYSCALL_FAILS_WITH(BindUnix(s.get(), dir.Path("missing/s")), ENOENT);
  ASSERT_SYSCALL_SUCCEEDS(BindUnix(s.get(), dir.Path("s")));
  UniqueFd again(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_SYSCALL_FAILS_WITH(BindUnix(again.get(), dir.Path("s")), EADDRINUSE);
  // A socket binds once.
  EXPECT_SYSCALL_FAILS_WITH(BindUnix(s.get(), dir.Path("s2")), EINVAL);
  EXPECT_EQ(access(dir.Path("s2").c_str(), F_OK), -1);
}

TEST(UnixSocketTest, ConnectErrors) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("file"), ""));
  UniqueFd c(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_SYSCALL_FAILS_WITH(ConnectUnix(c.get(), dir.Path("none")), ENOENT);
  EXPECT_SYSCALL_FAILS_WITH(ConnectUnix(c.get(), dir.Path("file")), ECONNREFUSED);
  // Write permission is checked before the type: /usr/bin/env is the host's.
  if (!IsRoot()) {
    EXPECT_SYSCALL_FAILS_WITH(ConnectUnix(c.get(), "/usr/bin/env"), EACCES);
  }
  EXPECT_SYSCALL_FAILS_WITH(ConnectUnix(c.get(), dir.Path("file/x")), ENOTDIR);
  // Bound but not listening.
  UniqueFd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(BindUnix(s.get(), dir.Path("s")));
  EXPECT_SYSCALL_FAILS_WITH(ConnectUnix(c.get(), dir.Path("s")), ECONNREFUSED);
  // A datagram socket's name, from a stream socket.
  UniqueFd d(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(BindUnix(d.get(), dir.Path("d")));
  EXPECT_SYSCALL_FAILS_WITH(ConnectUnix(c.get(), dir.Path("d")), EPROTOTYPE);
}

TEST(UnixSocketTest, ConnectFollowsSymlinksAndRenames) {
  ScratchDir dir;
  UniqueFd srv(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(BindUnix(srv.get(), dir.Path("srv")));
  ASSERT_SYSCALL_SUCCEEDS(listen(srv.get(), 4));
  ASSERT_SYSCALL_SUCCEEDS(symlink(dir.Path("moved").c_str(), dir.Path("link").c_str()));
  ASSERT_SYSCALL_SUCCEEDS(rename(dir.Path("srv").c_str(), dir.Path("moved").c_str()));
  UniqueFd c(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(ConnectUnix(c.get(), dir.Path("link")));
  // The name the kernel reports is still the one bound.
  EXPECT_EQ(SockName(c.get(), true), dir.Path("srv"));
}

TEST(UnixSocketTest, UnlinkedNameCannotBeReached) {
  ScratchDir dir;
  UniqueFd srv(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(BindUnix(srv.get(), dir.Path("srv")));
  ASSERT_SYSCALL_SUCCEEDS(listen(srv.get(), 4));
  ASSERT_SYSCALL_SUCCEEDS(unlink(dir.Path("srv").c_str()));
  UniqueFd c(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_SYSCALL_FAILS_WITH(ConnectUnix(c.get(), dir.Path("srv")), ENOENT);
  // The name is free again.
  UniqueFd s2(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_SYSCALL_SUCCEEDS(BindUnix(s2.get(), dir.Path("srv")));
}

// A connect that waits for a full backlog blocks only its caller: another
// thread's calls (a stat here) go on meanwhile, and the accept they lead to
// lets the connect finish.
TEST(UnixSocketTest, ConnectWaitingOnAFullBacklogBlocksOnlyItsCaller) {
  ScratchDir dir;
  UniqueFd srv(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(BindUnix(srv.get(), dir.Path("srv")));
  ASSERT_SYSCALL_SUCCEEDS(listen(srv.get(), 0));
  UniqueFd first(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(ConnectUnix(first.get(), dir.Path("srv")));
  std::atomic<bool> stat_done{false};
  std::thread helper([&] {
    usleep(200 * 1000);
    struct stat st;
    if (stat(dir.path().c_str(), &st) == 0) stat_done = true;
    for (int i = 0; i < 2; ++i) close(accept4(srv.get(), nullptr, nullptr, SOCK_CLOEXEC));
  });
  UniqueFd second(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_SYSCALL_SUCCEEDS(ConnectUnix(second.get(), dir.Path("srv")));
  helper.join();
  EXPECT_TRUE(stat_done);
}

// The same for a datagram to a receiver whose queue is full.
TEST(UnixSocketTest, SendtoWaitingOnAFullReceiverBlocksOnlyItsCaller) {
  ScratchDir dir;
  UniqueFd rx(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(BindUnix(rx.get(), dir.Path("rx")));
  UniqueFd tx(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  socklen_t len;
  sockaddr_un to = UnixAddr(dir.Path("rx"), &len);
  char byte = 'x';
  int queued = 0;
  while (sendto(tx.get(), &byte, 1, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&to), len) == 1) {
    ++queued;
  }
  ASSERT_EQ(errno, EAGAIN);
  std::atomic<bool> stat_done{false};
  std::thread helper([&] {
    usleep(200 * 1000);
    struct stat st;
    if (stat(dir.path().c_str(), &st) == 0) stat_done = true;
    char buf[4];
    for (int i = 0; i < 4; ++i) (void)!recv(rx.get(), buf, sizeof(buf), MSG_DONTWAIT);
  });
  EXPECT_EQ(sendto(tx.get(), &byte, 1, 0, reinterpret_cast<sockaddr*>(&to), len), 1);
  helper.join();
  EXPECT_TRUE(stat_done);
  EXPECT_GT(queued, 0);
}

// What the sentry reads for a trapped sendto is bounded and checked as the
// kernel does: the address length, both pointers, and the datagram's size.
TEST(UnixSocketTest, SendtoArgumentsAreCheckedAsLinuxDoes) {
  ScratchDir dir;
  UniqueFd rx(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(BindUnix(rx.get(), dir.Path("rx")));
  UniqueFd tx(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  socklen_t len;
  sockaddr_un to = UnixAddr(dir.Path("rx"), &len);
  auto* sa = reinterpret_cast<sockaddr*>(&to);
  EXPECT_SYSCALL_FAILS_WITH(sendto(tx.get(), "x", 1, 0, sa, sizeof(sockaddr_storage) + 1), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(
      sendto(tx.get(), "x", 1, 0, reinterpret_cast<sockaddr*>(8), sizeof(sockaddr_un)), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(sendto(tx.get(), reinterpret_cast<const void*>(8), 16, 0, sa, len),
                            EFAULT);
  std::vector<char> huge(1 << 20, 'x');
  EXPECT_SYSCALL_FAILS_WITH(sendto(tx.get(), huge.data(), huge.size(), 0, sa, len), EMSGSIZE);
  EXPECT_EQ(sendto(tx.get(), huge.data(), 1000, 0, sa, len), 1000);
}

TEST(UnixSocketTest, OpenOfASocketIsEnxio) {
  ScratchDir dir;
  UniqueFd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(BindUnix(s.get(), dir.Path("s")));
  EXPECT_SYSCALL_FAILS_WITH(open(dir.Path("s").c_str(), O_RDONLY), ENXIO);
  UniqueFd p(open(dir.Path("s").c_str(), O_PATH | O_CLOEXEC));
  EXPECT_SYSCALL_SUCCEEDS(p.get());
}

TEST(UnixSocketTest, WritePermissionIsNeededToConnect) {
  if (IsRoot()) GTEST_SKIP() << "root passes permission checks";
  ScratchDir dir;
  UniqueFd srv(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(BindUnix(srv.get(), dir.Path("srv")));
  ASSERT_SYSCALL_SUCCEEDS(listen(srv.get(), 4));
  ASSERT_SYSCALL_SUCCEEDS(chmod(dir.Path("srv").c_str(), 0500));
  UniqueFd c(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_SYSCALL_FAILS_WITH(ConnectUnix(c.get(), dir.Path("srv")), EACCES);
  ASSERT_SYSCALL_SUCCEEDS(chmod(dir.Path("srv").c_str(), 0200));
  EXPECT_SYSCALL_SUCCEEDS(ConnectUnix(c.get(), dir.Path("srv")));
}

TEST(UnixSocketTest, DatagramSendtoAPathAndRecvfromNamesTheSender) {
  ScratchDir dir;
  UniqueFd rx(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(BindUnix(rx.get(), dir.Path("rx")));
  UniqueFd tx(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(BindUnix(tx.get(), dir.Path("tx")));
  socklen_t len;
  sockaddr_un to = UnixAddr(dir.Path("rx"), &len);
  ASSERT_EQ(sendto(tx.get(), "dgram", 5, 0, reinterpret_cast<sockaddr*>(&to), len), 5);
  char buf[16] = {};
  sockaddr_un from{};
  socklen_t from_len = sizeof(from);
  ASSERT_EQ(recvfrom(rx.get(), buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &from_len),
            5);
  EXPECT_STREQ(buf, "dgram");
  EXPECT_EQ(std::string(from.sun_path), dir.Path("tx"));
  sockaddr_un none = UnixAddr(dir.Path("none"), &len);
  EXPECT_SYSCALL_FAILS_WITH(sendto(tx.get(), "x", 1, 0, reinterpret_cast<sockaddr*>(&none), len),
                            ENOENT);
}

// sendto with an address on a connected TCP socket: the address is ignored,
// and a write after shutdown raises SIGPIPE in the caller.
// The read-only interface queries name the sandbox's own interfaces
// (if_nametoindex, IPv6 scope ids by name): loopback is index 1 there, as on
// the host.
TEST(InetLoopbackTest, InterfaceQueriesNameLoopback) {
  EXPECT_EQ(if_nametoindex("lo"), 1u);
  char name[IF_NAMESIZE] = {};
  ASSERT_NE(if_indextoname(1, name), nullptr);
  EXPECT_STREQ(name, "lo");
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_SYSCALL_SUCCEEDS(fd);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  ASSERT_SYSCALL_SUCCEEDS(ioctl(fd, SIOCGIFFLAGS, &ifr));
  EXPECT_TRUE(ifr.ifr_flags & IFF_LOOPBACK);
  ASSERT_SYSCALL_SUCCEEDS(ioctl(fd, SIOCGIFINDEX, &ifr));
  EXPECT_EQ(ifr.ifr_ifindex, 1);
  EXPECT_EQ(if_nametoindex("no-such-interface"), 0u);
  close(fd);
}

// The other read-only interface queries, on loopback: its address, mask,
// MTU and hardware address (none: ARPHRD_LOOPBACK), its name by index, and
// its entry in SIOCGIFCONF; the C library's helpers built on them (and on
// RTM_GETLINK: if_nameindex) and IPv6 scope ids by name.
TEST(InetLoopbackTest, LoopbackAddressesByInterfaceQueries) {
  UniqueFd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  auto v4 = [&] { return ntohl(reinterpret_cast<sockaddr_in&>(ifr.ifr_addr).sin_addr.s_addr); };
  ASSERT_SYSCALL_SUCCEEDS(ioctl(fd.get(), SIOCGIFADDR, &ifr));
  EXPECT_EQ(v4(), INADDR_LOOPBACK);
  ASSERT_SYSCALL_SUCCEEDS(ioctl(fd.get(), SIOCGIFNETMASK, &ifr));
  EXPECT_EQ(v4(), 0xff000000u);
  ASSERT_SYSCALL_SUCCEEDS(ioctl(fd.get(), SIOCGIFMTU, &ifr));
  EXPECT_GT(ifr.ifr_mtu, 0);
  ASSERT_SYSCALL_SUCCEEDS(ioctl(fd.get(), SIOCGIFHWADDR, &ifr));
  EXPECT_EQ(ifr.ifr_hwaddr.sa_family, 772);  // ARPHRD_LOOPBACK
  ifreq by_index{};
  by_index.ifr_ifindex = 1;
  ASSERT_SYSCALL_SUCCEEDS(ioctl(fd.get(), SIOCGIFNAME, &by_index));
  EXPECT_STREQ(by_index.ifr_name, "lo");
  ifreq none{};
  std::strncpy(none.ifr_name, "no-such-if", IFNAMSIZ - 1);
  EXPECT_SYSCALL_FAILS_WITH(ioctl(fd.get(), SIOCGIFINDEX, &none), ENODEV);
  ifreq list[32] = {};
  ifconf conf{};
  conf.ifc_len = sizeof(list);
  conf.ifc_req = list;
  ASSERT_SYSCALL_SUCCEEDS(ioctl(fd.get(), SIOCGIFCONF, &conf));
  bool lo = false;
  for (size_t i = 0; i < conf.ifc_len / sizeof(ifreq); ++i) {
    if (std::string(list[i].ifr_name) == "lo") {
      lo = ntohl(reinterpret_cast<sockaddr_in&>(list[i].ifr_addr).sin_addr.s_addr) ==
           INADDR_LOOPBACK;
    }
  }
  EXPECT_TRUE(lo);
  struct if_nameindex* names = if_nameindex();
  ASSERT_NE(names, nullptr);
  EXPECT_EQ(names[0].if_index, 1u);
  EXPECT_STREQ(names[0].if_name, "lo");
  if_freenameindex(names);
  addrinfo hints{};
  hints.ai_family = AF_INET6;
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* res = nullptr;
  ASSERT_EQ(getaddrinfo("fe80::1%lo", "80", &hints, &res), 0);
  EXPECT_EQ(reinterpret_cast<sockaddr_in6*>(res->ai_addr)->sin6_scope_id, 1u);
  char host[NI_MAXHOST];
  ASSERT_EQ(
      getnameinfo(res->ai_addr, res->ai_addrlen, host, sizeof(host), nullptr, 0, NI_NUMERICHOST),
      0);
  EXPECT_STREQ(host, "fe80::1%lo");
  freeaddrinfo(res);
}

TEST(InetLoopbackTest, SendtoAfterShutdownRaisesSigpipe) {
  UniqueFd srv(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a = BindLoopback(srv.get());
  ASSERT_SYSCALL_SUCCEEDS(listen(srv.get(), 4));
  UniqueFd c(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(connect(c.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)));
  ASSERT_EQ(sendto(c.get(), "ok", 2, 0, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 2);
  ASSERT_SYSCALL_SUCCEEDS(shutdown(c.get(), SHUT_WR));
  sigset_t set, oldset;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, &oldset);
  EXPECT_SYSCALL_FAILS_WITH(
      sendto(c.get(), "x", 1, MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&a), sizeof(a)), EPIPE);
  sigset_t pending;
  sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, SIGPIPE)) << "MSG_NOSIGNAL, yet SIGPIPE";
  EXPECT_SYSCALL_FAILS_WITH(sendto(c.get(), "x", 1, 0, reinterpret_cast<sockaddr*>(&a), sizeof(a)),
                            EPIPE);
  sigpending(&pending);
  EXPECT_TRUE(sigismember(&pending, SIGPIPE)) << "SIGPIPE was not raised";
  int sig;
  if (sigismember(&pending, SIGPIPE)) sigwait(&set, &sig);
  pthread_sigmask(SIG_SETMASK, &oldset, nullptr);
}

TEST(UnixSocketTest, SendtoWithAnAddressOnAConnectedStreamIsEisconn) {
  int sv[2];
  ASSERT_SYSCALL_SUCCEEDS(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
  UniqueFd a(sv[0]), b(sv[1]);
  socklen_t len;
  sockaddr_un to = UnixAddr("/tmp/anything", &len);
  EXPECT_SYSCALL_FAILS_WITH(sendto(a.get(), "x", 1, 0, reinterpret_cast<sockaddr*>(&to), len),
                            EISCONN);
}

TEST(UnixSocketTest, PathAddressOnAnInetSocket) {
  UniqueFd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  socklen_t len;
  sockaddr_un a = UnixAddr("/tmp/x", &len);
  EXPECT_SYSCALL_FAILS_WITH(bind(s.get(), reinterpret_cast<sockaddr*>(&a), len), EINVAL);
}

TEST(InetLoopbackTest, BlockingConnectResults) {
  UniqueFd srv(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a = BindLoopback(srv.get());
  UniqueFd c(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  // Bound but not listening: refused.
  EXPECT_SYSCALL_FAILS_WITH(connect(c.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)),
                            ECONNREFUSED);
  ASSERT_SYSCALL_SUCCEEDS(listen(srv.get(), 4));
  UniqueFd d(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_SYSCALL_SUCCEEDS(connect(d.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)));
  EXPECT_SYSCALL_FAILS_WITH(connect(d.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), EISCONN);
}

TEST(InetLoopbackTest, UdpSendtoAndBindConflicts) {
  UniqueFd rx(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in a = BindLoopback(rx.get());
  EXPECT_NE(a.sin_port, 0);
  UniqueFd tx(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(sendto(tx.get(), "udp", 3, 0, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 3);
  char buf[8] = {};
  EXPECT_EQ(recv(rx.get(), buf, sizeof(buf), 0), 3);
  UniqueFd dup_bind(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  EXPECT_SYSCALL_FAILS_WITH(bind(dup_bind.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)),
                            EADDRINUSE);
  // A bad address length.
  EXPECT_SYSCALL_FAILS_WITH(sendto(tx.get(), "x", 1, 0, reinterpret_cast<sockaddr*>(&a), 3),
                            EINVAL);
}

}  // namespace
}  // namespace sentry::conformance

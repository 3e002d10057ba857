// The credentials a unix socket names its peer by (SO_PEERCRED, SO_PEERPIDFD):
// the process that connected, seen from the one that accepted, and the one
// that listened, seen from the one that connected; as Linux records them
// (af_unix.c: init_peercred at connect and listen, socketpair for both).
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "tests/conformance/conformance_util.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

namespace sentry::conformance {
namespace {

constexpr int kPidfdThread = O_EXCL;  // PIDFD_THREAD: a pidfd of one thread

struct Cred {
  pid_t pid;
  uid_t uid;
  gid_t gid;
  bool operator==(const Cred&) const = default;
};

Cred PeerCred(int fd) {
  ucred u{};
  socklen_t len = sizeof(u);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &u, &len) < 0 || len != sizeof(u)) {
    return {-1, 0, 0};
  }
  return {u.pid, u.uid, u.gid};
}

Cred Own() { return {getpid(), getuid(), getgid()}; }

sockaddr_un Addr(const std::string& path, socklen_t* len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  return a;
}

// A child connects to a listener at a path; the parent accepts. Each side
// reads its peer: the child what it was told of the listener, the parent
// the child. The child waits to be read before it exits.
void CheckConnectedPair(int type) {
  ScratchDir dir;
  std::string path = dir.Path("peer.sock");
  socklen_t len;
  sockaddr_un a = Addr(path, &len);
  UniqueFd listener(socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(listener.get());
  ASSERT_SYSCALL_SUCCEEDS(bind(listener.get(), reinterpret_cast<sockaddr*>(&a), len));
  ASSERT_SYSCALL_SUCCEEDS(listen(listener.get(), 4));
  int go[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(go, O_CLOEXEC));
  Cred parent = Own();
  pid_t child = fork();
  ASSERT_SYSCALL_SUCCEEDS(child);
  if (child == 0) {
    close(go[1]);
    int c = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (c < 0 || connect(c, reinterpret_cast<sockaddr*>(&a), len) < 0) _exit(2);
    Cred seen = PeerCred(c);
    if (write(c, &seen, sizeof(seen)) != sizeof(seen)) _exit(3);
    char byte;
    (void)!read(go[0], &byte, 1);
    _exit(0);
  }
  UniqueFd conn(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(conn.get());
  EXPECT_EQ(PeerCred(conn.get()), (Cred{child, getuid(), getgid()}));
  Cred told{};
  ASSERT_EQ(read(conn.get(), &told, sizeof(told)), static_cast<ssize_t>(sizeof(told)));
  EXPECT_EQ(told, parent) << "the connecting side names the listener's process";
  // SO_PEERPIDFD (Linux 6.5+): a pidfd of the connecting process, which is
  // this process's child, so waitid through it reaps exactly that child.
  int pidfd = -1;
  socklen_t n = sizeof(pidfd);
  int rc = getsockopt(conn.get(), SOL_SOCKET, SO_PEERPIDFD, &pidfd, &n);
  close(go[1]);
  if (rc < 0) {
    EXPECT_EQ(errno, ENOPROTOOPT) << ErrnoName(errno);
    ASSERT_SYSCALL_SUCCEEDS(waitpid(child, nullptr, 0));
  } else {
    EXPECT_EQ(n, sizeof(int));
    EXPECT_EQ(fcntl(pidfd, F_GETFD), FD_CLOEXEC);
    EXPECT_EQ(fcntl(pidfd, F_GETFL) & kPidfdThread, 0) << "a process's pidfd, not a thread's";
    siginfo_t info{};
    ASSERT_SYSCALL_SUCCEEDS(waitid(static_cast<idtype_t>(P_PIDFD), pidfd, &info, WEXITED));
    EXPECT_EQ(info.si_pid, child);
    EXPECT_EQ(info.si_status, 0);
    close(pidfd);
  }
  close(go[0]);
}

TEST(PeerCredTest, StreamPeersNameEachOthersProcess) { CheckConnectedPair(SOCK_STREAM); }

// The other way round: this process connects, a child accepts. Its
// SO_PEERPIDFD is a process pidfd of this very process (under sentry, the
// sandbox's first one: a pidfd the sentry kept for it since its start).
TEST(PeerCredTest, PeerPidfdOfTheConnectingParentIsThatProcess) {
  ScratchDir dir;
  std::string path = dir.Path("parent.sock");
  socklen_t len;
  sockaddr_un a = Addr(path, &len);
  UniqueFd listener(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(listener.get());
  ASSERT_SYSCALL_SUCCEEDS(bind(listener.get(), reinterpret_cast<sockaddr*>(&a), len));
  ASSERT_SYSCALL_SUCCEEDS(listen(listener.get(), 1));
  pid_t child = fork();
  ASSERT_SYSCALL_SUCCEEDS(child);
  if (child == 0) {
    int conn = accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) _exit(2);
    int pidfd = -1;
    socklen_t n = sizeof(pidfd);
    if (getsockopt(conn, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &n) < 0) {
      _exit(errno == ENOPROTOOPT ? 0 : 3);  // a kernel before 6.5
    }
    if (fcntl(pidfd, F_GETFL) & kPidfdThread) _exit(4);
    if (syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) != 0) _exit(5);
    // The parent's own pid: with pidfs (6.9) one inode per pid, so a pidfd
    // of another process (or of the parent's pid reused) differs.
    int parent = static_cast<int>(syscall(SYS_pidfd_open, getppid(), 0));
    struct stat mine, its;
    if (parent < 0 || fstat(pidfd, &mine) < 0 || fstat(parent, &its) < 0) _exit(6);
    if (mine.st_ino != its.st_ino || mine.st_dev != its.st_dev) _exit(7);
    _exit(0);
  }
  UniqueFd c(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(c.get());
  ASSERT_SYSCALL_SUCCEEDS(connect(c.get(), reinterpret_cast<sockaddr*>(&a), len));
  int status = 0;
  ASSERT_SYSCALL_SUCCEEDS(waitpid(child, &status, 0));
  EXPECT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2 accept, 3 getsockopt, 4 a thread's pidfd, "
                                       "5 pidfd_send_signal, 6 pidfd_open or fstat, "
                                       "7 another pid's pidfd";
}

TEST(PeerCredTest, SeqpacketPeersNameEachOthersProcess) { CheckConnectedPair(SOCK_SEQPACKET); }

// Short and empty buffers: SO_PEERCRED copies at most what fits and says so.
TEST(PeerCredTest, ShortBufferGetsThePrefix) {
  ScratchDir dir;
  std::string path = dir.Path("short.sock");
  socklen_t len;
  sockaddr_un a = Addr(path, &len);
  UniqueFd listener(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(bind(listener.get(), reinterpret_cast<sockaddr*>(&a), len));
  ASSERT_SYSCALL_SUCCEEDS(listen(listener.get(), 1));
  UniqueFd c(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(connect(c.get(), reinterpret_cast<sockaddr*>(&a), len));
  UniqueFd conn(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(conn.get());
  pid_t pid = 0;
  socklen_t n = sizeof(pid);
  ASSERT_SYSCALL_SUCCEEDS(getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &pid, &n));
  EXPECT_EQ(n, sizeof(pid));
  EXPECT_EQ(pid, getpid());
  n = 0;
  ASSERT_SYSCALL_SUCCEEDS(getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &pid, &n));
  EXPECT_EQ(n, 0u);
  int bad = -1;
  socklen_t neg = static_cast<socklen_t>(bad);
  EXPECT_SYSCALL_FAILS_WITH(getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &pid, &neg), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(
      getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &pid, reinterpret_cast<socklen_t*>(8)),
      EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(getsockopt(-1, SOL_SOCKET, SO_PEERCRED, &pid, &n), EBADF);
  int fds[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(fds, O_CLOEXEC));
  EXPECT_SYSCALL_FAILS_WITH(getsockopt(fds[0], SOL_SOCKET, SO_PEERCRED, &pid, &n), ENOTSOCK);
  close(fds[0]);
  close(fds[1]);
}

TEST(PeerCredTest, SocketpairNamesTheCaller) {
  int sv[2];
  ASSERT_SYSCALL_SUCCEEDS(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
  EXPECT_EQ(PeerCred(sv[0]), Own());
  EXPECT_EQ(PeerCred(sv[1]), Own());
  close(sv[0]);
  close(sv[1]);
}

// A datagram socket connected to a bound one: neither side has credentials
// (pid 0, ids -1), and SO_PEERPIDFD has no peer (ENODATA).
TEST(PeerCredTest, DatagramPeerHasNoCredentials) {
  ScratchDir dir;
  std::string path = dir.Path("dgram.sock");
  socklen_t len;
  sockaddr_un a = Addr(path, &len);
  UniqueFd bound(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(bind(bound.get(), reinterpret_cast<sockaddr*>(&a), len));
  UniqueFd c(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(connect(c.get(), reinterpret_cast<sockaddr*>(&a), len));
  Cred none{0, static_cast<uid_t>(-1), static_cast<gid_t>(-1)};
  EXPECT_EQ(PeerCred(c.get()), none);
  EXPECT_EQ(PeerCred(bound.get()), none);
  int pidfd = -1;
  socklen_t n = sizeof(pidfd);
  int rc = getsockopt(c.get(), SOL_SOCKET, SO_PEERPIDFD, &pidfd, &n);
  EXPECT_EQ(rc, -1);
  EXPECT_TRUE(errno == ENODATA || errno == ENOPROTOOPT) << ErrnoName(errno);
}

}  // namespace
}  // namespace sentry::conformance

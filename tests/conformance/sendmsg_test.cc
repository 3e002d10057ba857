// sendmsg and sendmmsg: addresses, gathered data, control messages and
// errors as Linux gives them (under sentry both are answered by the sentry,
// which reads the msghdr once).
#include <fcntl.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

sockaddr_un UnixAddr(const std::string& path, socklen_t* len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.data(), std::min(path.size(), sizeof(a.sun_path) - 1));
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  return a;
}

UniqueFd BoundDgram(const std::string& path) {
  UniqueFd s(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  socklen_t len;
  sockaddr_un a = UnixAddr(path, &len);
  EXPECT_SYSCALL_SUCCEEDS(bind(s.get(), reinterpret_cast<sockaddr*>(&a), len));
  return s;
}

ssize_t SendTo(int s, const std::string& path, std::vector<std::string> parts, int flags = 0) {
  socklen_t len;
  sockaddr_un a = UnixAddr(path, &len);
  std::vector<iovec> iov;
  for (std::string& p : parts) iov.push_back({p.data(), p.size()});
  msghdr m{};
  m.msg_name = &a;
  m.msg_namelen = len;
  m.msg_iov = iov.data();
  m.msg_iovlen = iov.size();
  return sendmsg(s, &m, flags);
}

TEST(UnixDgramSendmsgTest, GathersTheDataToAPathAndNamesTheSender) {
  ScratchDir dir;
  UniqueFd rx = BoundDgram(dir.Path("rx"));
  UniqueFd tx = BoundDgram(dir.Path("tx"));
  ASSERT_EQ(SendTo(tx.get(), dir.Path("rx"), {"gat", "", "hered"}), 8);
  char buf[32] = {};
  sockaddr_un from{};
  socklen_t from_len = sizeof(from);
  ASSERT_EQ(recvfrom(rx.get(), buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &from_len),
            8);
  EXPECT_STREQ(buf, "gathered");
  EXPECT_EQ(std::string(from.sun_path), dir.Path("tx"));
}

TEST(UnixDgramSendmsgTest, ErrorsAreLinuxs) {
  ScratchDir dir;
  UniqueFd rx = BoundDgram(dir.Path("rx"));
  UniqueFd tx(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  EXPECT_SYSCALL_FAILS_WITH(SendTo(tx.get(), dir.Path("none"), {"x"}), ENOENT);
  ASSERT_SYSCALL_SUCCEEDS(
      close(open(dir.Path("file").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600)));
  EXPECT_SYSCALL_FAILS_WITH(SendTo(tx.get(), dir.Path("file"), {"x"}), ECONNREFUSED);
  EXPECT_SYSCALL_FAILS_WITH(SendTo(tx.get(), dir.Path("rx"), {std::string(1 << 20, 'x')}),
                            EMSGSIZE);
  socklen_t len;
  sockaddr_un a = UnixAddr(dir.Path("rx"), &len);
  char byte = 'x';
  iovec v{&byte, 1};
  msghdr m{};
  m.msg_name = &a;
  m.msg_namelen = sizeof(sockaddr_storage) + 1;
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  EXPECT_SYSCALL_FAILS_WITH(sendmsg(tx.get(), &m, 0), EINVAL);
  m.msg_namelen = len;
  m.msg_name = reinterpret_cast<void*>(8);
  EXPECT_SYSCALL_FAILS_WITH(sendmsg(tx.get(), &m, 0), EFAULT);
  m.msg_name = &a;
  v.iov_base = reinterpret_cast<void*>(8);
  EXPECT_SYSCALL_FAILS_WITH(sendmsg(tx.get(), &m, 0), EFAULT);
  v.iov_base = &byte;
  m.msg_iovlen = IOV_MAX + 1;
  EXPECT_SYSCALL_FAILS_WITH(sendmsg(tx.get(), &m, 0), EMSGSIZE);
  m.msg_iovlen = 1;
  EXPECT_SYSCALL_FAILS_WITH(sendmsg(tx.get(), reinterpret_cast<msghdr*>(8), 0), EFAULT);
  EXPECT_EQ(sendmsg(tx.get(), &m, 0), 1);
}

TEST(UnixDgramSendmsgTest, SendmmsgSendsEachAndWritesItsLength) {
  ScratchDir dir;
  UniqueFd rx = BoundDgram(dir.Path("rx"));
  UniqueFd tx(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  socklen_t len;
  sockaddr_un a = UnixAddr(dir.Path("rx"), &len);
  std::string parts[3] = {"one", "three", "fifteen"};
  iovec iov[3];
  mmsghdr mm[4] = {};
  for (int i = 0; i < 3; ++i) {
    iov[i] = {parts[i].data(), parts[i].size()};
    mm[i].msg_hdr.msg_name = &a;
    mm[i].msg_hdr.msg_namelen = len;
    mm[i].msg_hdr.msg_iov = &iov[i];
    mm[i].msg_hdr.msg_iovlen = 1;
  }
  ASSERT_EQ(sendmmsg(tx.get(), mm, 3, 0), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(mm[i].msg_len, parts[i].size());
    char buf[16] = {};
    EXPECT_EQ(recv(rx.get(), buf, sizeof(buf), 0), static_cast<ssize_t>(parts[i].size()));
    EXPECT_EQ(std::string(buf), parts[i]);
  }
  // A failing message after a sent one: the count so far.
  mm[1].msg_hdr.msg_iov = reinterpret_cast<iovec*>(8);
  EXPECT_EQ(sendmmsg(tx.get(), mm, 3, 0), 1);
  mm[0].msg_hdr.msg_iov = reinterpret_cast<iovec*>(8);
  EXPECT_SYSCALL_FAILS_WITH(sendmmsg(tx.get(), mm, 3, 0), EFAULT);
  EXPECT_EQ(sendmmsg(tx.get(), mm, 0, 0), 0);
}

// With no names (a connected pair): each message goes whole, and each one's
// length is written back. Unix stream and seqpacket sockets are what a
// sandbox without namespaces allows, so this case runs there too.
TEST(SendmmsgTest, OnASeqpacketPairKeepsEachMessage) {
  int sv[2];
  ASSERT_SYSCALL_SUCCEEDS(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv));
  UniqueFd tx(sv[0]), rx(sv[1]);
  std::string parts[3] = {"one", "three", "fifteen"};
  iovec iov[3];
  mmsghdr mm[3] = {};
  for (int i = 0; i < 3; ++i) {
    iov[i] = {parts[i].data(), parts[i].size()};
    mm[i].msg_hdr.msg_iov = &iov[i];
    mm[i].msg_hdr.msg_iovlen = 1;
  }
  ASSERT_EQ(sendmmsg(tx.get(), mm, 3, 0), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(mm[i].msg_len, parts[i].size());
    char buf[16] = {};
    EXPECT_EQ(recv(rx.get(), buf, sizeof(buf), 0), static_cast<ssize_t>(parts[i].size()));
    EXPECT_EQ(std::string(buf), parts[i]);
  }
  EXPECT_SYSCALL_FAILS_WITH(sendmmsg(tx.get(), static_cast<mmsghdr*>(UnmappedAddress()), 1, 0),
                            EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(sendmmsg(-1, mm, 1, 0), EBADF);
}

// SCM_RIGHTS passes the sender's own object; SCM_CREDENTIALS must name the
// sender itself (no capability to name another).
TEST(SendmsgTest, PassesFdsAndOwnCredentials) {
  int sv[2];
  ASSERT_SYSCALL_SUCCEEDS(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
  UniqueFd a(sv[0]), b(sv[1]);
  int one = 1;
  ASSERT_SYSCALL_SUCCEEDS(setsockopt(b.get(), SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)));
  int p[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(p, O_CLOEXEC));
  UniqueFd pr(p[0]), pw(p[1]);
  ASSERT_EQ(write(pw.get(), "through", 7), 7);

  char byte = 'm';
  iovec v{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(ucred))] = {};
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  int fd = pr.get();
  std::memcpy(CMSG_DATA(c), &fd, sizeof(fd));
  c = CMSG_NXTHDR(&m, c);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_CREDENTIALS;
  c->cmsg_len = CMSG_LEN(sizeof(ucred));
  ucred mine{getpid(), getuid(), getgid()};
  std::memcpy(CMSG_DATA(c), &mine, sizeof(mine));
  ASSERT_EQ(sendmsg(a.get(), &m, 0), 1);

  char got = 0;
  alignas(cmsghdr) char in_control[256] = {};
  iovec in_v{&got, 1};
  msghdr in{};
  in.msg_iov = &in_v;
  in.msg_iovlen = 1;
  in.msg_control = in_control;
  in.msg_controllen = sizeof(in_control);
  ASSERT_EQ(recvmsg(b.get(), &in, MSG_CMSG_CLOEXEC), 1);
  EXPECT_EQ(got, 'm');
  int passed = -1;
  ucred creds{};
  for (cmsghdr* h = CMSG_FIRSTHDR(&in); h; h = CMSG_NXTHDR(&in, h)) {
    if (h->cmsg_type == SCM_RIGHTS) std::memcpy(&passed, CMSG_DATA(h), sizeof(int));
    if (h->cmsg_type == SCM_CREDENTIALS) std::memcpy(&creds, CMSG_DATA(h), sizeof(creds));
  }
  ASSERT_GE(passed, 0);
  UniqueFd passed_fd(passed);
  char buf[16] = {};
  EXPECT_EQ(read(passed_fd.get(), buf, sizeof(buf)), 7);
  EXPECT_STREQ(buf, "through");
  EXPECT_EQ(creds.pid, getpid());
  EXPECT_EQ(creds.uid, getuid());
  EXPECT_EQ(creds.gid, getgid());

  // Another process's pid: EPERM without CAP_SYS_ADMIN.
  if (!IsRoot()) {
    c = CMSG_FIRSTHDR(&m);
    c = CMSG_NXTHDR(&m, c);
    ucred other{getppid(), getuid(), getgid()};
    std::memcpy(CMSG_DATA(c), &other, sizeof(other));
    EXPECT_SYSCALL_FAILS_WITH(sendmsg(a.get(), &m, 0), EPERM);
  }
  // A control header longer than the buffer, and a passed fd that is not open.
  c = CMSG_FIRSTHDR(&m);
  c->cmsg_len = sizeof(control) + 16;
  EXPECT_SYSCALL_FAILS_WITH(sendmsg(a.get(), &m, 0), EINVAL);
  c->cmsg_len = CMSG_LEN(sizeof(int));
  m.msg_controllen = CMSG_SPACE(sizeof(int));
  int bad = 999;
  std::memcpy(CMSG_DATA(c), &bad, sizeof(bad));
  EXPECT_SYSCALL_FAILS_WITH(sendmsg(a.get(), &m, 0), EBADF);
}

TEST(SendmsgTest, AnAddressOnAConnectedStreamIsEisconn) {
  int sv[2];
  ASSERT_SYSCALL_SUCCEEDS(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
  UniqueFd a(sv[0]), b(sv[1]);
  EXPECT_SYSCALL_FAILS_WITH(SendTo(a.get(), "/tmp/anything", {"x"}), EISCONN);
  char byte = 'x';
  iovec v{&byte, 1};
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  EXPECT_EQ(sendmsg(a.get(), &m, 0), 1);
  int p[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(p, O_CLOEXEC));
  UniqueFd pr(p[0]), pw(p[1]);
  EXPECT_SYSCALL_FAILS_WITH(sendmsg(pw.get(), &m, 0), ENOTSOCK);
}

}  // namespace
}  // namespace sentry::conformance

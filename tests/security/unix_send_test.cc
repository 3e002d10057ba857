// A host unix socket in a directory the mount view shows (/usr/local/share)
// must never receive a guest's data, whatever call carries the address:
// sendmsg and sendmmsg carry it in guest memory, where the seccomp filter
// cannot look (the red team's escape: both ran natively and the kernel
// resolved the path in the mount view).
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "tests/security/security_util.h"

namespace sentry::security {
namespace {

// A world-writable datagram socket bound by the host at path, removed after.
class HostDgramSocket {
 public:
  explicit HostDgramSocket(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.data(), path.size());
    bound_ = bind(fd_, reinterpret_cast<sockaddr*>(&a),
                  offsetof(sockaddr_un, sun_path) + path.size() + 1) == 0 &&
             chmod(path.c_str(), 0777) == 0;
  }
  ~HostDgramSocket() {
    close(fd_);
    unlink(path_.c_str());
  }
  bool bound() const { return bound_; }
  // Every datagram that reached it.
  std::string Received() {
    std::string all;
    char buf[256];
    ssize_t n;
    while ((n = recv(fd_, buf, sizeof(buf), 0)) > 0) all.append(buf, n);
    return all;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

std::string SendProbePath() { return UNIX_SEND_PROBE_PATH; }

TEST(UnixSendWall, HostSocketInTheMountViewNeverReceives) {
  std::string path = "/usr/local/share/sec-unix-send-" + RandomToken(8) + ".sock";
  HostDgramSocket host(path);
  ASSERT_TRUE(host.bound()) << "cannot bind " << path;
  ProcessResult r = sentry::testing::RunSentry({"--copy", SendProbePath() + ":/tmp/usp"},
                                               {"/tmp/usp", path, "10000"}, "", 120);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  Results res = ParseResults(r.out);
  EXPECT_EQ(host.Received(), "") << "a guest's data reached the host socket " << path;
  if (SeccompOnly()) {
    // No unix datagram socket at all without a network namespace.
    EXPECT_EQ(Code(res, "socket_dgram"), "EACCES") << r.out;
    return;
  }
  ASSERT_EQ(Code(res, "socket_dgram"), "OK") << r.out;
  // The host's socket is no socket the sandbox bound: not there (ENOENT), or
  // a lower-layer node that leads nowhere (ECONNREFUSED).
  for (const char* call :
       {"sendmsg", "sendmmsg", "sendmsg_relative", "sendmsg_symlink", "connect"}) {
    std::string code = Code(res, call);
    EXPECT_TRUE(code == "ENOENT" || code == "ECONNREFUSED") << call << "\n" << r.out;
  }
  EXPECT_NE(Code(res, "sendmsg_proc_root"), "OK") << r.out;
  // Both sides of the race were hit: the address was read once each time.
  EXPECT_GT(std::stol(Value(res, "race_delivered")), 0) << r.out;
  EXPECT_GT(std::stol(Value(res, "race_refused")), 0) << r.out;
  EXPECT_EQ(Value(res, "race_other"), "0") << r.out;
}

// The reproduction as the red team wrote it, through Python's socket module.
TEST(UnixSendWall, PythonSendmsgToAHostSocketIsRefused) {
  std::string path = "/usr/local/share/sec-unix-py-" + RandomToken(8) + ".sock";
  HostDgramSocket host(path);
  ASSERT_TRUE(host.bound());
  ProcessResult r = RunPy(
      "import socket\n"
      "t('sendmsg', lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendmsg(\n"
      "  [b'ESCAPED'], [], 0, " +
      PyQuote(path) + "))\n");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(host.Received(), "");
  Results res = ParseResults(r.out);
  EXPECT_NE(Code(res, "sendmsg"), "OK") << r.out;
}

}  // namespace
}  // namespace sentry::security

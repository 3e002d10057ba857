#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

TEST(DevTest, NullReadsEof) {
  UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  char buf[16];
  EXPECT_EQ(read(fd.get(), buf, sizeof(buf)), 0);
}

TEST(DevTest, NullSwallowsWrites) {
  UniqueFd fd(open("/dev/null", O_WRONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  const std::string data(100000, 'x');
  EXPECT_EQ(write(fd.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
}

TEST(DevTest, ZeroReadsZeros) {
  UniqueFd fd(open("/dev/zero", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  char buf[256];
  std::fill(buf, buf + sizeof(buf), 'x');
  ASSERT_EQ(read(fd.get(), buf, sizeof(buf)), static_cast<ssize_t>(sizeof(buf)));
  EXPECT_EQ(std::string(buf, sizeof(buf)), std::string(sizeof(buf), '\0'));
}

TEST(DevTest, UrandomGivesBytes) {
  UniqueFd fd(open("/dev/urandom", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  char buf[64] = {};
  ASSERT_EQ(read(fd.get(), buf, sizeof(buf)), static_cast<ssize_t>(sizeof(buf)));
  // 64 zero bytes from a working generator would be a 2^-512 event.
  EXPECT_NE(std::string(buf, sizeof(buf)), std::string(sizeof(buf), '\0'));
}

TEST(DevTest, FullRejectsWrites) {
  UniqueFd fd(open("/dev/full", O_WRONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_FAILS_WITH(write(fd.get(), "x", 1), ENOSPC);
}

TEST(DevTest, FullReadsZeros) {
  UniqueFd fd(open("/dev/full", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  char buf[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  ASSERT_EQ(read(fd.get(), buf, sizeof(buf)), 8);
  EXPECT_EQ(std::string(buf, 8), std::string(8, '\0'));
}

TEST(DevTest, DeviceNumbers) {
  const struct {
    const char* path;
    unsigned minor;
  } devices[] = {{"/dev/null", 3}, {"/dev/zero", 5}, {"/dev/full", 7}, {"/dev/urandom", 9}};
  for (const auto& dev : devices) {
    SCOPED_TRACE(dev.path);
    const struct stat st = StatOrFail(dev.path);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(major(st.st_rdev), 1u);
    EXPECT_EQ(minor(st.st_rdev), dev.minor);
    EXPECT_EQ(st.st_mode & 0777, 0666u);
  }
}

TEST(DevTest, NullSeeksToZero) {
  UniqueFd fd(open("/dev/null", O_RDWR | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_EQ(lseek(fd.get(), 100, SEEK_SET), 0);
}

// Pseudo-terminals: the sandbox has its own (a private devpts instance).
TEST(PtyTest, OpenptGivesAWorkingPair) {
  UniqueFd master(posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(master.get());
  ASSERT_SYSCALL_SUCCEEDS(grantpt(master.get()));
  ASSERT_SYSCALL_SUCCEEDS(unlockpt(master.get()));
  const char* name = ptsname(master.get());
  ASSERT_NE(name, nullptr) << ErrnoString();
  const std::string slave_path = name;
  EXPECT_EQ(slave_path.rfind("/dev/pts/", 0), 0u) << slave_path;
  UniqueFd slave(open(slave_path.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(slave.get());
  EXPECT_TRUE(isatty(master.get()));
  EXPECT_TRUE(isatty(slave.get()));
  struct termios raw;
  ASSERT_SYSCALL_SUCCEEDS(tcgetattr(slave.get(), &raw));
  cfmakeraw(&raw);
  ASSERT_SYSCALL_SUCCEEDS(tcsetattr(slave.get(), TCSANOW, &raw));
  ASSERT_EQ(write(master.get(), "ping", 4), 4);
  char buf[16];
  ASSERT_EQ(read(slave.get(), buf, sizeof(buf)), 4);
  EXPECT_EQ(std::string(buf, 4), "ping");
  ASSERT_EQ(write(slave.get(), "pong", 4), 4);
  ASSERT_EQ(read(master.get(), buf, sizeof(buf)), 4);
  EXPECT_EQ(std::string(buf, 4), "pong");
  struct stat by_path, by_fd;
  ASSERT_SYSCALL_SUCCEEDS(stat(slave_path.c_str(), &by_path));
  ASSERT_SYSCALL_SUCCEEDS(fstat(slave.get(), &by_fd));
  EXPECT_TRUE(S_ISCHR(by_path.st_mode));
  EXPECT_EQ(by_path.st_rdev, by_fd.st_rdev);
  EXPECT_EQ(by_path.st_uid, getuid());
}

TEST(PtyTest, PeerAndTtynameAgree) {
  UniqueFd master(posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(master.get());
  ASSERT_SYSCALL_SUCCEEDS(unlockpt(master.get()));
  UniqueFd peer(ioctl(master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(peer.get());
  const char* tty = ttyname(peer.get());
  ASSERT_NE(tty, nullptr) << ErrnoString();
  const char* pts = ptsname(master.get());
  ASSERT_NE(pts, nullptr);
  EXPECT_STREQ(tty, pts);
  char link[64];
  const ssize_t n =
      readlink(("/proc/self/fd/" + std::to_string(peer.get())).c_str(), link, sizeof(link));
  ASSERT_SYSCALL_SUCCEEDS(n);
  EXPECT_EQ(std::string(link, static_cast<size_t>(n)), pts);
}

TEST(PtyTest, MissingPtsEntryFails) {
  struct stat st;
  EXPECT_SYSCALL_FAILS_WITH(stat("/dev/pts/999999", &st), ENOENT);
}

}  // namespace
}  // namespace sentry::conformance

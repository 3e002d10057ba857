#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <termios.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

TEST(UnameTest, SysnameIsLinux) {
  struct utsname u = {};
  ASSERT_SYSCALL_SUCCEEDS(uname(&u));
  EXPECT_STREQ(u.sysname, "Linux");
  EXPECT_STREQ(u.machine, "x86_64");
  EXPECT_GT(strlen(u.release), 0u);
  EXPECT_GT(strlen(u.nodename), 0u);
}

TEST(UnameTest, BadPointerFails) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_uname, reinterpret_cast<void*>(1)), EFAULT);
}

TEST(IdentityTest, NewFileIsOwnedByEffectiveIds) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  const struct stat st = StatOrFail(dir.Path("f"));
  EXPECT_EQ(st.st_uid, geteuid());
  EXPECT_EQ(st.st_gid, getegid());
}

TEST(IdentityTest, RealAndEffectiveIdsAgree) {
  EXPECT_EQ(getuid(), geteuid());
  EXPECT_EQ(getgid(), getegid());
  uid_t r, e, s;
  ASSERT_SYSCALL_SUCCEEDS(getresuid(&r, &e, &s));
  EXPECT_EQ(r, getuid());
  EXPECT_EQ(e, geteuid());
  EXPECT_EQ(s, geteuid());
}

// An unprivileged user asking to become nobody is refused with EPERM (what
// subprocess's user= and group= expect), not EINVAL for an unmapped id.
TEST(IdentityTest, BecomingNobodyIsNotPermitted) {
  SKIP_IF_ROOT();
  constexpr long kNobody = 65534;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_setuid, kNobody), EPERM);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_setgid, kNobody), EPERM);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_setreuid, kNobody, kNobody), EPERM);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_setregid, kNobody, kNobody), EPERM);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_setresuid, -1L, kNobody, -1L), EPERM);
  EXPECT_EQ(getuid(), geteuid());
}

TEST(SysinfoTest, Succeeds) {
  struct sysinfo info = {};
  ASSERT_SYSCALL_SUCCEEDS(sysinfo(&info));
  EXPECT_GT(info.totalram, 0u);
  EXPECT_GE(info.mem_unit, 1u);
  EXPECT_GE(info.procs, 1u);
}

TEST(UmaskTest, ReturnsPreviousMask) {
  const mode_t old = umask(023);
  EXPECT_EQ(umask(0777), 023u);
  EXPECT_EQ(umask(old), 0777u);
}

TEST(UmaskTest, IgnoresBitsAbove0777) {
  const mode_t old = umask(07777);
  EXPECT_EQ(umask(old), 0777u);
}

TEST(IoctlTest, TcgetsOnRegularFileFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  termios t;
  EXPECT_SYSCALL_FAILS_WITH(ioctl(fd.get(), TCGETS, &t), ENOTTY);
}

TEST(IoctlTest, TcgetsOnDevNullFails) {
  UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  termios t;
  EXPECT_SYSCALL_FAILS_WITH(ioctl(fd.get(), TCGETS, &t), ENOTTY);
}

TEST(IoctlTest, FionreadOnPipe) {
  int fds[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(fds, O_CLOEXEC));
  UniqueFd r(fds[0]), w(fds[1]);
  int avail = -1;
  ASSERT_SYSCALL_SUCCEEDS(ioctl(r.get(), FIONREAD, &avail));
  EXPECT_EQ(avail, 0);
  ASSERT_EQ(write(w.get(), "12345", 5), 5);
  ASSERT_SYSCALL_SUCCEEDS(ioctl(r.get(), FIONREAD, &avail));
  EXPECT_EQ(avail, 5);
}

TEST(IoctlTest, FionreadOnRegularFile) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "0123456789"));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_EQ(lseek(fd.get(), 3, SEEK_SET), 3);
  int avail = -1;
  ASSERT_SYSCALL_SUCCEEDS(ioctl(fd.get(), FIONREAD, &avail));
  EXPECT_EQ(avail, 7);
}

TEST(IoctlTest, FioclexAndFionclex) {
  UniqueFd fd(open("/dev/null", O_RDONLY));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_SYSCALL_SUCCEEDS(ioctl(fd.get(), FIOCLEX));
  EXPECT_EQ(fcntl(fd.get(), F_GETFD), FD_CLOEXEC);
  ASSERT_SYSCALL_SUCCEEDS(ioctl(fd.get(), FIONCLEX));
  EXPECT_EQ(fcntl(fd.get(), F_GETFD), 0);
}

TEST(IoctlTest, FionbioSetsNonblocking) {
  UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  int on = 1;
  ASSERT_SYSCALL_SUCCEEDS(ioctl(fd.get(), FIONBIO, &on));
  EXPECT_TRUE(fcntl(fd.get(), F_GETFL) & O_NONBLOCK);
}

TEST(IoctlTest, BadFdFails) { EXPECT_SYSCALL_FAILS_WITH(ioctl(-1, FIOCLEX), EBADF); }

TEST(PrctlTest, SetNameRoundTrips) {
  char saved[16] = {};
  ASSERT_SYSCALL_SUCCEEDS(prctl(PR_GET_NAME, saved));
  ASSERT_SYSCALL_SUCCEEDS(prctl(PR_SET_NAME, "conformance"));
  char name[16] = {};
  ASSERT_SYSCALL_SUCCEEDS(prctl(PR_GET_NAME, name));
  EXPECT_STREQ(name, "conformance");
  EXPECT_SYSCALL_SUCCEEDS(prctl(PR_SET_NAME, saved));
}

TEST(PrctlTest, SetNameTruncatesToFifteenBytes) {
  char saved[16] = {};
  ASSERT_SYSCALL_SUCCEEDS(prctl(PR_GET_NAME, saved));
  ASSERT_SYSCALL_SUCCEEDS(prctl(PR_SET_NAME, "0123456789abcdefghij"));
  char name[32];
  memset(name, 'X', sizeof(name));
  ASSERT_SYSCALL_SUCCEEDS(prctl(PR_GET_NAME, name));
  EXPECT_STREQ(name, "0123456789abcde");
  EXPECT_SYSCALL_SUCCEEDS(prctl(PR_SET_NAME, saved));
}

TEST(PrctlTest, NameIsVisibleInProcComm) {
  char saved[16] = {};
  ASSERT_SYSCALL_SUCCEEDS(prctl(PR_GET_NAME, saved));
  ASSERT_SYSCALL_SUCCEEDS(prctl(PR_SET_NAME, "comm-check"));
  EXPECT_EQ(ReadFile("/proc/self/comm").value_or(""), "comm-check\n");
  EXPECT_SYSCALL_SUCCEEDS(prctl(PR_SET_NAME, saved));
}

TEST(PrctlTest, DumpableRoundTrips) {
  EXPECT_EQ(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 1);
  ASSERT_SYSCALL_SUCCEEDS(prctl(PR_SET_DUMPABLE, 0, 0, 0, 0));
  EXPECT_EQ(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
  ASSERT_SYSCALL_SUCCEEDS(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
  EXPECT_EQ(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 1);
  EXPECT_SYSCALL_FAILS_WITH(prctl(PR_SET_DUMPABLE, 2, 0, 0, 0), EINVAL);
}

TEST(PrctlTest, UnknownOptionFails) {
  EXPECT_SYSCALL_FAILS_WITH(prctl(0x7fff1234, 0, 0, 0, 0), EINVAL);
}

}  // namespace
}  // namespace sentry::conformance

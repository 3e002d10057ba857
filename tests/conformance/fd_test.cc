#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

TEST(FdTest, FstatNegativeFdFails) {
  struct stat st;
  EXPECT_SYSCALL_FAILS_WITH(fstat(-1, &st), EBADF);
}

TEST(FdTest, FstatClosedFdFails) {
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_SYSCALL_SUCCEEDS(fd);
  ASSERT_SYSCALL_SUCCEEDS(close(fd));
  struct stat st;
  EXPECT_SYSCALL_FAILS_WITH(fstat(fd, &st), EBADF);
}

TEST(FdTest, CloseTwiceFails) {
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_SYSCALL_SUCCEEDS(fd);
  ASSERT_SYSCALL_SUCCEEDS(close(fd));
  EXPECT_SYSCALL_FAILS_WITH(close(fd), EBADF);
}

TEST(FdTest, GetdentsOnFileFails) {
  UniqueFd fd(open("/etc/passwd", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  alignas(8) char buf[4096];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_getdents64, fd.get(), buf, sizeof(buf)), ENOTDIR);
}

TEST(FdTest, FchdirOnFileFails) {
  UniqueFd fd(open("/etc/passwd", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_FAILS_WITH(fchdir(fd.get()), ENOTDIR);
}

TEST(FdTest, FchdirBadFdFails) { EXPECT_SYSCALL_FAILS_WITH(fchdir(-1), EBADF); }

TEST(FdTest, ReadDirectoryFails) {
  ScratchDir dir;
  UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  char buf[16];
  EXPECT_SYSCALL_FAILS_WITH(read(fd.get(), buf, sizeof(buf)), EISDIR);
}

TEST(FdTest, WrongAccessModeFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "abc"));
  UniqueFd ro(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  UniqueFd wo(open(dir.Path("f").c_str(), O_WRONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(ro.get());
  ASSERT_SYSCALL_SUCCEEDS(wo.get());
  char c = 'x';
  EXPECT_SYSCALL_FAILS_WITH(write(ro.get(), &c, 1), EBADF);
  EXPECT_SYSCALL_FAILS_WITH(read(wo.get(), &c, 1), EBADF);
}

TEST(FdTest, OPathFdCannotBeRead) {
  UniqueFd fd(open("/etc/passwd", O_PATH | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  char c;
  EXPECT_SYSCALL_FAILS_WITH(read(fd.get(), &c, 1), EBADF);
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd.get(), &st));
  EXPECT_EQ(st.st_ino, StatOrFail("/etc/passwd").st_ino);
}

TEST(FdTest, DupSharesIdentityWithPath) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  UniqueFd copy(dup(fd.get()));
  ASSERT_SYSCALL_SUCCEEDS(copy.get());
  struct stat a, b;
  ASSERT_SYSCALL_SUCCEEDS(fstat(fd.get(), &a));
  ASSERT_SYSCALL_SUCCEEDS(fstat(copy.get(), &b));
  const struct stat by_path = StatOrFail(dir.Path("f"));
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_EQ(a.st_dev, b.st_dev);
  EXPECT_EQ(a.st_ino, by_path.st_ino);
  EXPECT_EQ(a.st_dev, by_path.st_dev);
}

TEST(FdTest, DirectoryFdIdentityMatchesPath) {
  ScratchDir dir;
  UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  UniqueFd copy(fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
  ASSERT_SYSCALL_SUCCEEDS(copy.get());
  struct stat st;
  ASSERT_SYSCALL_SUCCEEDS(fstat(copy.get(), &st));
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_ino, StatOrFail(dir.path()).st_ino);
  EXPECT_EQ(st.st_dev, StatOrFail(dir.path()).st_dev);
}

TEST(FdTest, DupSharesOffset) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "abcdef"));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  UniqueFd copy(dup(fd.get()));
  ASSERT_SYSCALL_SUCCEEDS(copy.get());
  char buf[2];
  ASSERT_EQ(read(fd.get(), buf, 2), 2);
  EXPECT_EQ(lseek(copy.get(), 0, SEEK_CUR), 2);
  ASSERT_EQ(read(copy.get(), buf, 2), 2);
  EXPECT_EQ(std::string(buf, 2), "cd");
}

TEST(FdTest, DupClearsCloexec) {
  UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  UniqueFd copy(dup(fd.get()));
  ASSERT_SYSCALL_SUCCEEDS(copy.get());
  EXPECT_EQ(fcntl(copy.get(), F_GETFD), 0);
}

TEST(FdTest, Dup2AndDup3) {
  UniqueFd fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_EQ(dup2(fd.get(), fd.get()), fd.get());
  EXPECT_SYSCALL_FAILS_WITH(dup3(fd.get(), fd.get(), 0), EINVAL);
  UniqueFd target(open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(target.get());
  EXPECT_SYSCALL_FAILS_WITH(dup3(fd.get(), target.get(), O_NONBLOCK), EINVAL);
  EXPECT_EQ(dup3(fd.get(), target.get(), O_CLOEXEC), target.get());
  EXPECT_EQ(fcntl(target.get(), F_GETFD), FD_CLOEXEC);
}

TEST(FdTest, DupBadFdFails) {
  EXPECT_SYSCALL_FAILS_WITH(dup(-1), EBADF);
  EXPECT_SYSCALL_FAILS_WITH(dup2(-1, 100), EBADF);
}

TEST(FdTest, GetflReportsAccessModeAndAppend) {
  ScratchDir dir;
  UniqueFd fd(open(dir.Path("f").c_str(), O_CREAT | O_RDWR | O_APPEND | O_CLOEXEC, 0600));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  const int flags = fcntl(fd.get(), F_GETFL);
  ASSERT_SYSCALL_SUCCEEDS(flags);
  EXPECT_EQ(flags & O_ACCMODE, O_RDWR);
  EXPECT_TRUE(flags & O_APPEND);
}

TEST(FdTest, SetflAppendMovesWritesToEnd) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "abc"));
  UniqueFd fd(open(dir.Path("f").c_str(), O_WRONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_SYSCALL_SUCCEEDS(fcntl(fd.get(), F_SETFL, O_APPEND));
  ASSERT_EQ(write(fd.get(), "d", 1), 1);
  EXPECT_EQ(ReadFile(dir.Path("f")).value_or(""), "abcd");
}

TEST(FdTest, SeekOnPipeFails) {
  int fds[2];
  ASSERT_SYSCALL_SUCCEEDS(pipe2(fds, O_CLOEXEC));
  UniqueFd r(fds[0]), w(fds[1]);
  EXPECT_SYSCALL_FAILS_WITH(lseek(r.get(), 0, SEEK_SET), ESPIPE);
  char c;
  EXPECT_SYSCALL_FAILS_WITH(pread(r.get(), &c, 1, 0), ESPIPE);
}

TEST(FdTest, SeekBeforeStartFails) {
  UniqueFd fd(open("/etc/passwd", O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_FAILS_WITH(lseek(fd.get(), -1, SEEK_SET), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(lseek(fd.get(), 0, 42), EINVAL);
}

}  // namespace
}  // namespace sentry::conformance

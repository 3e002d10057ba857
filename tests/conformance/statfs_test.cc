#include <fcntl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

TEST(StatfsTest, TmpSucceeds) {
  struct statfs fs = {};
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_statfs, "/tmp", &fs));
  EXPECT_GT(fs.f_bsize, 0);
  EXPECT_GT(fs.f_namelen, 0);
}

TEST(StatfsTest, RootSucceeds) {
  struct statfs fs = {};
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_statfs, "/", &fs));
  EXPECT_GT(fs.f_bsize, 0);
}

TEST(StatfsTest, ScratchDirMatchesTmp) {
  ScratchDir dir;
  struct statfs scratch = {}, tmp = {};
  ASSERT_SYSCALL_SUCCEEDS(statfs(dir.path().c_str(), &scratch));
  ASSERT_SYSCALL_SUCCEEDS(statfs("/tmp", &tmp));
  EXPECT_EQ(scratch.f_type, tmp.f_type);
  EXPECT_EQ(scratch.f_bsize, tmp.f_bsize);
}

TEST(StatfsTest, MissingFails) {
  ScratchDir dir;
  struct statfs fs;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_statfs, dir.Path("missing").c_str(), &fs), ENOENT);
}

TEST(StatfsTest, FileAsPathComponentFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  struct statfs fs;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_statfs, dir.Path("f/x").c_str(), &fs), ENOTDIR);
}

TEST(StatfsTest, BadPointersFail) {
  struct statfs fs;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_statfs, reinterpret_cast<char*>(1), &fs), EFAULT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_statfs, "/tmp", reinterpret_cast<void*>(1)), EFAULT);
}

TEST(FstatfsTest, MatchesStatfs) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  struct statfs by_fd = {}, by_path = {};
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_fstatfs, fd.get(), &by_fd));
  ASSERT_SYSCALL_SUCCEEDS(statfs(dir.Path("f").c_str(), &by_path));
  EXPECT_EQ(by_fd.f_type, by_path.f_type);
  EXPECT_EQ(by_fd.f_bsize, by_path.f_bsize);
}

TEST(FstatfsTest, BadFdFails) {
  struct statfs fs;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_fstatfs, -1, &fs), EBADF);
}

}  // namespace
}  // namespace sentry::conformance

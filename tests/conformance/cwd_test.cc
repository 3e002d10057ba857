#include <fcntl.h>
#include <linux/limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

std::string Cwd() {
  char buf[PATH_MAX];
  return getcwd(buf, sizeof(buf)) != nullptr ? buf : "";
}

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) != nullptr ? buf : "";
}

TEST(CwdTest, GetcwdReturnsWhatChdirEntered) {
  ScratchDir dir;
  CwdGuard guard;
  ASSERT_SYSCALL_SUCCEEDS(chdir(dir.path().c_str()));
  EXPECT_EQ(Cwd(), RealPath(dir.path()));
}

TEST(CwdTest, RawGetcwdReturnsLengthWithNul) {
  ScratchDir dir;
  CwdGuard guard;
  ASSERT_SYSCALL_SUCCEEDS(chdir(dir.path().c_str()));
  char buf[PATH_MAX];
  const long n = syscall(SYS_getcwd, buf, sizeof(buf));
  ASSERT_SYSCALL_SUCCEEDS(n);
  EXPECT_EQ(static_cast<size_t>(n), RealPath(dir.path()).size() + 1);
  EXPECT_EQ(buf[n - 1], '\0');
}

TEST(CwdTest, GetcwdWithSmallBufferFails) {
  ScratchDir dir;
  CwdGuard guard;
  ASSERT_SYSCALL_SUCCEEDS(chdir(dir.path().c_str()));
  const size_t exact = RealPath(dir.path()).size() + 1;
  char buf[PATH_MAX];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_getcwd, buf, 1), ERANGE);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_getcwd, buf, exact - 1), ERANGE);
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_getcwd, buf, exact));
}

TEST(CwdTest, GetcwdWithZeroSizeFails) {
  char buf[8];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_getcwd, buf, 0), ERANGE);
}

TEST(CwdTest, GetcwdBadBufferFails) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_getcwd, reinterpret_cast<char*>(1), PATH_MAX), EFAULT);
}

TEST(CwdTest, RelativePathsResolveFromNewCwd) {
  ScratchDir dir;
  CwdGuard guard;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_TRUE(WriteFile(dir.Path("d/f"), "rel"));
  ASSERT_SYSCALL_SUCCEEDS(chdir(dir.path().c_str()));
  EXPECT_EQ(ReadFile("d/f").value_or(""), "rel");
  ASSERT_SYSCALL_SUCCEEDS(chdir("d"));
  EXPECT_EQ(ReadFile("f").value_or(""), "rel");
  EXPECT_EQ(ReadFile("./../d/./f").value_or(""), "rel");
  EXPECT_EQ(Cwd(), RealPath(dir.Path("d")));
}

TEST(CwdTest, FchdirThenRelativeResolution) {
  ScratchDir dir;
  CwdGuard guard;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "via fd"));
  UniqueFd dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(dfd.get());
  ASSERT_SYSCALL_SUCCEEDS(fchdir(dfd.get()));
  EXPECT_EQ(ReadFile("f").value_or(""), "via fd");
  EXPECT_EQ(Cwd(), RealPath(dir.path()));
}

TEST(CwdTest, ChdirThroughSymlinkShowsTarget) {
  ScratchDir dir;
  CwdGuard guard;
  ASSERT_TRUE(MakeDir(dir.Path("real")));
  ASSERT_TRUE(MakeSymlink("real", dir.Path("link")));
  ASSERT_SYSCALL_SUCCEEDS(chdir(dir.Path("link").c_str()));
  EXPECT_EQ(Cwd(), RealPath(dir.Path("real")));
  ASSERT_SYSCALL_SUCCEEDS(chdir(".."));
  EXPECT_EQ(Cwd(), RealPath(dir.path()));
}

TEST(CwdTest, DotDotAtRootStaysAtRoot) {
  CwdGuard guard;
  ASSERT_SYSCALL_SUCCEEDS(chdir("/"));
  ASSERT_SYSCALL_SUCCEEDS(chdir(".."));
  EXPECT_EQ(Cwd(), "/");
  ASSERT_SYSCALL_SUCCEEDS(chdir("../../.."));
  EXPECT_EQ(Cwd(), "/");
  EXPECT_EQ(StatOrFail("/..").st_ino, StatOrFail("/").st_ino);
  EXPECT_EQ(StatOrFail("/../../usr/bin/true").st_ino, StatOrFail("/usr/bin/true").st_ino);
}

TEST(CwdTest, ChdirToFileFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(chdir(dir.Path("f").c_str()), ENOTDIR);
}

TEST(CwdTest, ChdirToMissingFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(chdir(dir.Path("missing").c_str()), ENOENT);
}

TEST(CwdTest, ChdirBadPointerFails) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_chdir, reinterpret_cast<char*>(1)), EFAULT);
}

TEST(CwdTest, ChdirWithoutSearchPermissionFails) {
  SKIP_IF_ROOT();
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d"), 0600));
  EXPECT_SYSCALL_FAILS_WITH(chdir(dir.Path("d").c_str()), EACCES);
}

TEST(CwdTest, GetcwdOfRemovedDirectoryFails) {
  ScratchDir dir;
  CwdGuard guard;
  ASSERT_TRUE(MakeDir(dir.Path("gone")));
  ASSERT_SYSCALL_SUCCEEDS(chdir(dir.Path("gone").c_str()));
  ASSERT_SYSCALL_SUCCEEDS(rmdir(dir.Path("gone").c_str()));
  char buf[PATH_MAX];
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_getcwd, buf, sizeof(buf)), ENOENT);
  EXPECT_SYSCALL_FAILS_WITH(open("new", O_CREAT | O_WRONLY, 0600), ENOENT);
}

}  // namespace
}  // namespace sentry::conformance

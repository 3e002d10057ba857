#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

long Faccessat2(int dirfd, const std::string& path, int mode, int flags) {
  return syscall(SYS_faccessat2, dirfd, path.c_str(), mode, flags);
}

TEST(AccessTest, ExistingFileIsFound) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_access, dir.Path("f").c_str(), F_OK));
}

TEST(AccessTest, MissingFileFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_access, dir.Path("missing").c_str(), F_OK), ENOENT);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_access, dir.Path("missing").c_str(), R_OK), ENOENT);
}

TEST(AccessTest, OwnerBitsGrantAccess) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "", 0700));
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_access, dir.Path("f").c_str(), R_OK | W_OK | X_OK));
}

// Even root needs one execute bit somewhere to pass X_OK on a regular file.
TEST(AccessTest, NoExecuteBitDeniesExecute) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "", 0666));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_access, dir.Path("f").c_str(), X_OK), EACCES);
}

TEST(AccessTest, ReadOnlyFileDeniesWrite) {
  SKIP_IF_ROOT();
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "", 0400));
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_access, dir.Path("f").c_str(), R_OK));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_access, dir.Path("f").c_str(), W_OK), EACCES);
}

TEST(AccessTest, ModeZeroDeniesRead) {
  SKIP_IF_ROOT();
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "", 0000));
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_access, dir.Path("f").c_str(), F_OK));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_access, dir.Path("f").c_str(), R_OK), EACCES);
}

TEST(AccessTest, SystemBinaryIsExecutableButNotWritable) {
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_access, "/usr/bin/true", R_OK | X_OK));
  if (IsRoot()) return;
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_access, "/usr/bin/true", W_OK), EACCES);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_access, "/usr/bin", W_OK), EACCES);
}

TEST(AccessTest, InvalidModeFails) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_access, "/dev/null", 8), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_access, "/dev/null", -1), EINVAL);
}

TEST(AccessTest, FileAsPathComponentFails) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_access, dir.Path("f/x").c_str(), F_OK), ENOTDIR);
}

TEST(AccessTest, BadPointerFails) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_access, reinterpret_cast<char*>(1), F_OK), EFAULT);
}

TEST(AccessTest, FollowsSymlinks) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("missing", dir.Path("dangling")));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_access, dir.Path("dangling").c_str(), F_OK), ENOENT);
}

TEST(FaccessatTest, RelativeToDirfd) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  UniqueFd dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(dfd.get());
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_faccessat, dfd.get(), "f", R_OK | W_OK));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_faccessat, dfd.get(), "missing", F_OK), ENOENT);
}

TEST(FaccessatTest, BadDirfdFails) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_faccessat, 100000, "x", F_OK), EBADF);
}

TEST(Faccessat2Test, EaccessMatchesRealIdsWhenTheyAgree) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "", 0600));
  EXPECT_SYSCALL_SUCCEEDS(Faccessat2(AT_FDCWD, dir.Path("f"), R_OK | W_OK, AT_EACCESS));
  EXPECT_SYSCALL_FAILS_WITH(Faccessat2(AT_FDCWD, dir.Path("f"), X_OK, AT_EACCESS), EACCES);
}

TEST(Faccessat2Test, SymlinkNofollowChecksTheLink) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("missing", dir.Path("dangling")));
  EXPECT_SYSCALL_SUCCEEDS(Faccessat2(AT_FDCWD, dir.Path("dangling"), F_OK, AT_SYMLINK_NOFOLLOW));
  EXPECT_SYSCALL_FAILS_WITH(Faccessat2(AT_FDCWD, dir.Path("dangling"), F_OK, 0), ENOENT);
}

TEST(Faccessat2Test, EmptyPathChecksTheFd) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "", 0600));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_SUCCEEDS(Faccessat2(fd.get(), "", R_OK, AT_EMPTY_PATH));
  EXPECT_SYSCALL_FAILS_WITH(Faccessat2(fd.get(), "", X_OK, AT_EMPTY_PATH), EACCES);
  EXPECT_SYSCALL_FAILS_WITH(Faccessat2(fd.get(), "", F_OK, 0), ENOENT);
}

TEST(Faccessat2Test, InvalidFlagsFail) {
  EXPECT_SYSCALL_FAILS_WITH(Faccessat2(AT_FDCWD, "/dev/null", F_OK, 0x1), EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(Faccessat2(AT_FDCWD, "/dev/null", F_OK, AT_SYMLINK_FOLLOW), EINVAL);
}

TEST(Faccessat2Test, InvalidModeFails) {
  EXPECT_SYSCALL_FAILS_WITH(Faccessat2(AT_FDCWD, "/dev/null", 0x10, 0), EINVAL);
}

}  // namespace
}  // namespace sentry::conformance

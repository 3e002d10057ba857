#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "tests/conformance/conformance_util.h"

namespace sentry::conformance {
namespace {

mode_t Mode(const std::string& path) { return StatOrFail(path).st_mode & 07777; }

TEST(ChmodTest, ModeIsVisibleInStat) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_chmod, dir.Path("f").c_str(), 0751));
  EXPECT_EQ(Mode(dir.Path("f")), 0751u);
  EXPECT_TRUE(S_ISREG(StatOrFail(dir.Path("f")).st_mode));
}

TEST(ChmodTest, IsNotReducedByUmask) {
  ScratchDir dir;
  UmaskGuard mask(0777);
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_SYSCALL_SUCCEEDS(chmod(dir.Path("f").c_str(), 0666));
  EXPECT_EQ(Mode(dir.Path("f")), 0666u);
}

TEST(ChmodTest, UmaskAppliesAtCreation) {
  ScratchDir dir;
  UmaskGuard mask(027);
  UniqueFd fd(open(dir.Path("f").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0666));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_EQ(Mode(dir.Path("f")), 0640u);
}

TEST(ChmodTest, FollowsSymlinks) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "", 0600));
  ASSERT_TRUE(MakeSymlink("f", dir.Path("link")));
  ASSERT_SYSCALL_SUCCEEDS(chmod(dir.Path("link").c_str(), 0640));
  EXPECT_EQ(Mode(dir.Path("f")), 0640u);
  EXPECT_TRUE(S_ISLNK(LstatOrFail(dir.Path("link")).st_mode));
}

TEST(ChmodTest, DirectoryMode) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  ASSERT_SYSCALL_SUCCEEDS(chmod(dir.Path("d").c_str(), 0711));
  EXPECT_EQ(Mode(dir.Path("d")), 0711u);
}

TEST(ChmodTest, MissingFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(chmod(dir.Path("missing").c_str(), 0644), ENOENT);
}

TEST(ChmodTest, NotOwnerFails) {
  SKIP_IF_ROOT();
  EXPECT_SYSCALL_FAILS_WITH(chmod("/etc/passwd", 0644), EPERM);
}

TEST(ChmodTest, BadPointerFails) {
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_chmod, reinterpret_cast<char*>(1), 0644), EFAULT);
}

TEST(FchmodTest, ModeIsVisibleInStat) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_SYSCALL_SUCCEEDS(fchmod(fd.get(), 0604));
  EXPECT_EQ(Mode(dir.Path("f")), 0604u);
}

TEST(FchmodTest, WorksOnDirectoryFd) {
  ScratchDir dir;
  ASSERT_TRUE(MakeDir(dir.Path("d")));
  UniqueFd fd(open(dir.Path("d").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_SYSCALL_SUCCEEDS(fchmod(fd.get(), 0750));
  EXPECT_EQ(Mode(dir.Path("d")), 0750u);
}

TEST(FchmodTest, BadFdFails) { EXPECT_SYSCALL_FAILS_WITH(fchmod(-1, 0644), EBADF); }

TEST(FchmodatTest, RelativeToDirfd) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  UniqueFd dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(dfd.get());
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_fchmodat, dfd.get(), "f", 0400));
  EXPECT_EQ(Mode(dir.Path("f")), 0400u);
}

// fchmodat2 (Linux 6.6) takes flags: AT_SYMLINK_NOFOLLOW on a symlink is
// EOPNOTSUPP (fs/open.c), AT_EMPTY_PATH names the dirfd itself.
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

#define SKIP_WITHOUT_FCHMODAT2()                                       \
  do {                                                                 \
    if (syscall(SYS_fchmodat2, -1, "", 0, 0) < 0 && errno == ENOSYS) { \
      GTEST_SKIP() << "no fchmodat2 in this kernel";                   \
    }                                                                  \
  } while (0)

TEST(Fchmodat2Test, RelativeToDirfd) {
  SKIP_WITHOUT_FCHMODAT2();
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "x", 0644));
  UniqueFd dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(dfd.get());
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_fchmodat2, dfd.get(), "f", 0600, 0));
  EXPECT_EQ(Mode(dir.Path("f")), 0600u);
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_fchmodat2, AT_FDCWD, dir.Path("f").c_str(), 0640, 0));
  EXPECT_EQ(Mode(dir.Path("f")), 0640u);
}

TEST(Fchmodat2Test, FlagsAsLinuxChecksThem) {
  SKIP_WITHOUT_FCHMODAT2();
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), "x", 0644));
  ASSERT_TRUE(MakeSymlink("f", dir.Path("link")));
  EXPECT_SYSCALL_FAILS_WITH(
      syscall(SYS_fchmodat2, AT_FDCWD, dir.Path("link").c_str(), 0600, AT_SYMLINK_NOFOLLOW),
      EOPNOTSUPP);
  EXPECT_EQ(Mode(dir.Path("f")), 0644u);
  // Through the link without the flag: the target.
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_fchmodat2, AT_FDCWD, dir.Path("link").c_str(), 0600, 0));
  EXPECT_EQ(Mode(dir.Path("f")), 0600u);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_fchmodat2, AT_FDCWD, dir.Path("f").c_str(), 0600, 0x1),
                            EINVAL);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_fchmodat2, AT_FDCWD, dir.Path("missing").c_str(), 0600, 0),
                            ENOENT);
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  ASSERT_SYSCALL_SUCCEEDS(syscall(SYS_fchmodat2, fd.get(), "", 0604, AT_EMPTY_PATH));
  EXPECT_EQ(Mode(dir.Path("f")), 0604u);
}

TEST(ChownTest, NoChangeIsAllowed) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_chown, dir.Path("f").c_str(), -1, -1));
  EXPECT_EQ(StatOrFail(dir.Path("f")).st_uid, geteuid());
}

TEST(ChownTest, ToOwnIdsSucceeds) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_chown, dir.Path("f").c_str(), geteuid(), getegid()));
  const struct stat st = StatOrFail(dir.Path("f"));
  EXPECT_EQ(st.st_uid, geteuid());
  EXPECT_EQ(st.st_gid, getegid());
}

TEST(ChownTest, ToAnotherUserFails) {
  SKIP_IF_ROOT();
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_chown, dir.Path("f").c_str(), geteuid() + 1, -1), EPERM);
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_chown, dir.Path("f").c_str(), 0, -1), EPERM);
}

TEST(ChownTest, ToGroupNotAMemberOfFails) {
  SKIP_IF_ROOT();
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  // The suite runs with its supplementary groups cleared, so only the egid is ours.
  gid_t groups[64];
  if (getgroups(64, groups) != 0) GTEST_SKIP() << "has supplementary groups";
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_chown, dir.Path("f").c_str(), -1, getegid() + 1), EPERM);
}

TEST(ChownTest, MissingFails) {
  ScratchDir dir;
  EXPECT_SYSCALL_FAILS_WITH(chown(dir.Path("missing").c_str(), -1, -1), ENOENT);
}

TEST(FchownTest, ToOwnIdsSucceeds) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_SUCCEEDS(fchown(fd.get(), geteuid(), getegid()));
  EXPECT_SYSCALL_SUCCEEDS(fchown(fd.get(), -1, -1));
}

TEST(FchownTest, BadFdFails) { EXPECT_SYSCALL_FAILS_WITH(fchown(-1, -1, -1), EBADF); }

TEST(LchownTest, ChangesTheLinkItself) {
  ScratchDir dir;
  ASSERT_TRUE(MakeSymlink("missing", dir.Path("link")));
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_lchown, dir.Path("link").c_str(), geteuid(), getegid()));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_chown, dir.Path("link").c_str(), geteuid(), getegid()),
                            ENOENT);
}

TEST(FchownatTest, SymlinkNofollowAndEmptyPath) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  ASSERT_TRUE(MakeSymlink("missing", dir.Path("link")));
  UniqueFd dfd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(dfd.get());
  EXPECT_SYSCALL_SUCCEEDS(
      syscall(SYS_fchownat, dfd.get(), "link", geteuid(), getegid(), AT_SYMLINK_NOFOLLOW));
  EXPECT_SYSCALL_FAILS_WITH(syscall(SYS_fchownat, dfd.get(), "link", geteuid(), getegid(), 0),
                            ENOENT);
  UniqueFd fd(open(dir.Path("f").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_SYSCALL_SUCCEEDS(fd.get());
  EXPECT_SYSCALL_SUCCEEDS(syscall(SYS_fchownat, fd.get(), "", -1, -1, AT_EMPTY_PATH));
}

TEST(FchownatTest, InvalidFlagsFail) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFile(dir.Path("f"), ""));
  EXPECT_SYSCALL_FAILS_WITH(
      syscall(SYS_fchownat, AT_FDCWD, dir.Path("f").c_str(), -1, -1, AT_REMOVEDIR), EINVAL);
}

}  // namespace
}  // namespace sentry::conformance
